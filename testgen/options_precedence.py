"""Category options.precedence: environment x execute merging.

A test holds "env" ({"enable","disable","dump"}: string or null = unset) and
"steps" run in order on one context:
  {"action": "execute", "enable": [...], "disable": [...], "canonical": ...,
   "levels": {"plan","kernel","none"}}            effective options of the call
  {"action": "execute", ..., "error": {kind, offset, token, source}}
  {"action": "setenv", "env": {...}}              no effect until reload
  {"action": "reload"} / {"action": "reload", "error": {...}}
Invalid tests whose context creation fails: "steps": [] + "createError".
Expectations come from optmodel.py (env snapshot, then execute items).
"""

import random

from catalogue import NAMES
from optmodel import OptError, apply_execute, env_options
from vecfile import VectorFile

NOTES = {
    "EnvOnly": "Only the environment supplies options.",
    "ExecuteOnly": "Only execute lists supply options.",
    "Merge": "Environment and execute items merged: environment first, then "
             "execute enable items, then execute disable items.",
    "ArgOverride": "An execute item replaces the arguments the environment "
                   "gave the same option.",
    "NoSwitchOff": "Execute lists cannot switch off an environment option.",
    "NoLeak": "Execute items apply to that call only; the next call sees the "
              "environment alone.",
    "Reload": "setenv changes nothing until kiln_context_reload_env().",
    "ReloadError": "A malformed environment at reload fails the reload and "
                   "keeps the previous snapshot in force.",
    "CreateError": "A malformed environment fails context creation with the "
                   "parse error (not later, at first use).",
    "ExecuteError": "A malformed execute element fails that call with an "
                    "error naming 'execute enable[i]' / 'execute disable[i]'; "
                    "the next call is unaffected.",
    "Levels": "Per-level canonical texts (plan / kernel / none).",
    "Random": "Generated from a fixed seed: random environment and execute "
              "lists.",
}


def _env(enable=None, disable=None, dump=None):
    return {"enable": enable, "disable": disable, "dump": dump}


def _err(e):
    return {"kind": e.kind, "offset": e.offset, "token": e.token,
            "source": e.source}


class Sim:
    """Simulates one context for building the expected steps."""

    def __init__(self, env):
        self.env = dict(env)
        self.snapshot = env_options(env["enable"], env["disable"], env["dump"])
        self.steps = []

    def execute(self, enable=(), disable=()):
        st = {"action": "execute", "enable": list(enable),
              "disable": list(disable)}
        try:
            o = apply_execute(self.snapshot, enable, disable)
            st["canonical"] = o.canonical()
            st["levels"] = o.levels()
        except OptError as e:
            st["error"] = _err(e)
        self.steps.append(st)
        return self

    def setenv(self, env):
        self.env = dict(env)
        self.steps.append({"action": "setenv", "env": dict(env)})
        return self

    def reload(self):
        st = {"action": "reload"}
        try:
            self.snapshot = env_options(self.env["enable"],
                                        self.env["disable"], self.env["dump"])
        except OptError as e:
            st["error"] = _err(e)
        self.steps.append(st)
        return self


def build():
    vf = VectorFile("options.precedence", NOTES)

    def add(group, comment, flags, env, script):
        sim = Sim(env)
        script(sim)
        bad = any("error" in s for s in sim.steps)
        vf.add("OptionPrecedence", group, {
            "comment": comment, "flags": flags + ["Levels"],
            "result": "invalid" if bad else "valid",
            "env": dict(env), "steps": sim.steps})

    envs = [
        _env(),
        _env(enable="fast_math"),
        _env(disable="fma"),
        _env(enable="warn_register_spill(5)"),
        _env(disable="expr_simplify(cse)"),
        _env(dump="options,cache"),
        _env(enable="kernel_profile,fuse_matmul", disable="kernel_reuse"),
        _env(enable="", disable="", dump=""),
        _env(enable="fast_math,kernel_lineinfo",
             disable="fma,expr_simplify(fold,index)", dump="fusion_ir"),
        _env(disable="matmul_expr_eval,fallback,parallel_compile"),
    ]
    execs = [
        ([], []),
        (["fast_math"], []),
        ([], ["fma"]),
        (["warn_register_spill(64)"], ["expr_simplify(strength,cse)"]),
        (["kernel_debug", "kernel_profile"], ["compile_to_sass", "fallback"]),
        (["fuse_matmul"], ["matmul_expr_eval", "expr_simplify"]),
        (["warn_register_spill"], ["kernel_reuse", "nvrtc_caching"]),
    ]
    for ei, env in enumerate(envs):
        for xi, (en, dis) in enumerate(execs):
            flags = ["Merge", "NoLeak"]
            if not en and not dis:
                flags = ["EnvOnly"]
            elif ei == 0:
                flags = ["ExecuteOnly", "NoLeak"]
            add("environment x execute", "env #%d x execute #%d" % (ei, xi),
                flags, env,
                lambda s, en=en, dis=dis: s.execute(en, dis).execute()
                .execute(en, dis))

    # argument overrides
    add("argument override", "execute integer replaces environment integer",
        ["ArgOverride", "NoLeak"], _env(enable="warn_register_spill(5)"),
        lambda s: s.execute(["warn_register_spill(9)"]).execute()
        .execute(["warn_register_spill(0009)"]))
    add("argument override", "bare execute item resets the integer to 0",
        ["ArgOverride", "NoLeak"], _env(enable="warn_register_spill(5)"),
        lambda s: s.execute(["warn_register_spill"]).execute())
    add("argument override", "later execute element wins",
        ["ArgOverride"], _env(enable="warn_register_spill(5)"),
        lambda s: s.execute(["warn_register_spill(1)",
                             "warn_register_spill(2)"]).execute())
    add("argument override", "execute list replaces environment list",
        ["ArgOverride", "NoLeak"], _env(disable="expr_simplify(cse,fold)"),
        lambda s: s.execute([], ["expr_simplify(index)"]).execute())
    add("argument override", "bare execute expr_simplify means all passes",
        ["ArgOverride", "NoLeak"], _env(disable="expr_simplify(cse)"),
        lambda s: s.execute([], ["expr_simplify"]).execute())
    add("argument override", "execute list replaces bare environment item",
        ["ArgOverride", "NoLeak"], _env(disable="expr_simplify"),
        lambda s: s.execute([], ["expr_simplify(strength,strength)"])
        .execute())
    add("argument override", "second execute element replaces first",
        ["ArgOverride"], _env(),
        lambda s: s.execute([], ["expr_simplify(cse)",
                                 "expr_simplify(fold)"]))
    # no switch-off
    for env, en, dis in (
            (_env(disable="fma"), ["fast_math"], []),
            (_env(disable="fma"), [], ["fma"]),
            (_env(enable="fast_math"), [], ["fma"]),
            (_env(enable="fuse_matmul"), [], ["matmul_expr_eval"]),
            (_env(dump="options"), ["kernel_profile"], []),
            (_env(enable="kernel_debug", disable="kernel_reuse"), [], [])):
        add("no switch-off", "execute items only add: %r %r" % (en, dis),
            ["NoSwitchOff", "Merge"], env,
            lambda s, en=en, dis=dis: s.execute(en, dis).execute())
    # reload
    add("reload", "setenv has no effect until reload", ["Reload"],
        _env(enable="fast_math"),
        lambda s: s.execute().setenv(_env(enable="kernel_debug")).execute()
        .reload().execute().execute(["fast_math"]))
    add("reload", "reload to an empty environment", ["Reload"],
        _env(enable="fast_math", disable="fma", dump="cache"),
        lambda s: s.execute().setenv(_env()).reload().execute())
    add("reload", "reload from empty to full", ["Reload"], _env(),
        lambda s: s.execute(["kernel_profile"])
        .setenv(_env(enable="warn_register_spill(3)",
                     disable="expr_simplify(index)", dump="options"))
        .reload().execute(["warn_register_spill(4)"], ["expr_simplify"])
        .execute())
    add("reload", "two reloads", ["Reload"], _env(disable="fallback"),
        lambda s: s.setenv(_env(disable="fma")).reload().execute()
        .setenv(_env(disable="kernel_reuse")).reload().execute())
    for var, bad in (("enable", "fast_math,,"), ("disable", "fma(1)"),
                     ("dump", "Options"), ("enable", "warn_register_spill(x)"),
                     ("disable", "expr_simplify(cse"), ("dump", " cache")):
        add("reload error", "malformed %s at reload keeps the old snapshot"
            % var, ["ReloadError", "Reload"],
            _env(enable="kernel_lineinfo", disable="compile_to_sass"),
            lambda s, var=var, bad=bad: s.execute()
            .setenv(dict(_env(enable="fast_math"), **{var: bad})).reload()
            .execute().execute(["kernel_debug"])
            .setenv(_env(enable="fast_math")).reload().execute())
    # create errors
    bad_envs = [
        _env(enable="bogus"), _env(enable="fast_math, kernel_debug"),
        _env(enable="warn_register_spill(2147483648)"),
        _env(enable=",fast_math"), _env(enable="fast_math()"),
        _env(disable="fma,FMA"), _env(disable="expr_simplify(cse,nope)"),
        _env(disable="expr_simplify("), _env(disable="fma)"),
        _env(dump="cache,bogus"), _env(dump="fusion_ir(1)"),
        _env(dump=",,"), _env(enable="fast_math", disable="fast_math"),
        _env(enable="fma", disable="fma"),
        _env(enable="fast_math", disable="fma", dump="fma"),
        _env(enable="bogus", disable="bogus2", dump="bogus3"),
    ]
    for env in bad_envs:
        try:
            env_options(env["enable"], env["disable"], env["dump"])
            raise AssertionError("expected an error for %r" % env)
        except OptError as e:
            vf.add("OptionPrecedence", "context creation error", {
                "comment": "malformed environment fails context creation "
                           "(%s)" % e.source,
                "flags": ["CreateError"], "result": "invalid",
                "env": dict(env), "steps": [], "createError": _err(e)})
    # execute errors
    for en, dis in ((["fast_math", "bogus"], []),
                    (["fast_math,kernel_debug"], []),
                    ([], ["fma", "", "fallback"]),
                    ([], ["fma", "expr_simplify(cse", "fallback"]),
                    (["warn_register_spill(1,2)"], ["fma"]),
                    (["kernel_profile"], ["fast_math"]),
                    (["fma"], []),
                    ([], ["fma", "kernel_reuse", "matmul_expr_eval", "x y"])):
        add("execute error", "bad execute element: %r %r" % (en, dis),
            ["ExecuteError", "NoLeak"], _env(enable="kernel_lineinfo"),
            lambda s, en=en, dis=dis: s.execute(["kernel_debug"])
            .execute(en, dis).execute())
    # seeded random merges
    rng = random.Random(20261202)
    pool = {s: NAMES[s] for s in ("enable", "disable", "dump")}

    def rnd_item(set_):
        n = rng.choice(pool[set_])
        if n == "warn_register_spill" and rng.random() < 0.7:
            return "%s(%d)" % (n, rng.randrange(0, 1000))
        if n == "expr_simplify" and rng.random() < 0.7:
            k = rng.randrange(1, 4)
            return "%s(%s)" % (n, ",".join(
                rng.choice(("cse", "fold", "identity", "index", "strength"))
                for _ in range(k)))
        return n

    for i in range(30):
        env = _env(*(",".join(rnd_item(s) for _ in range(rng.randrange(0, 4)))
                     if rng.random() < 0.8 else None
                     for s in ("enable", "disable", "dump")))
        calls = []
        for _ in range(3):
            calls.append(([rnd_item("enable")
                           for _ in range(rng.randrange(0, 3))],
                          [rnd_item("disable")
                           for _ in range(rng.randrange(0, 3))]))

        def script(s, calls=calls):
            for en, dis in calls:
                s.execute(en, dis)
            s.execute()
        add("random", "random merge #%d" % i, ["Random", "Merge", "NoLeak"],
            env, script)
    return {"options.precedence.json": vf.finish()}
