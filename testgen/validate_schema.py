#!/usr/bin/env python3
"""Structural validation of conformance vector files (stdlib only).

Checks the key rules of conformance/schema.json without a JSON Schema
library: required top-level fields, numberOfTests, unique tcIds 1..N,
every flag defined in notes, result values, per-category required fields,
tensor hex encodings (width per dtype) and storage lengths, check objects.

    python3 testgen/validate_schema.py conformance/vectors/*.json
"""

import json
import re
import sys

WIDTH = {"bool": 1, "i32": 8, "i64": 16, "f16": 4, "bf16": 4, "f32": 8,
         "f64": 16}
HEX = re.compile(r"^0x[0-9a-f]+$")
RESULTS = ("valid", "invalid", "acceptable")
KINDS = ("syntax", "unknown", "argument", "element")
TOP = ("suite", "suiteVersion", "category", "numberOfTests", "notes",
       "testGroups")
CATEGORY_FIELDS = {
    "options.parse": ("source", "set", "input"),
    "options.precedence": ("env", "steps"),
    "cache.isolation": ("fusion", "steps"),
    "numerics": ("fusion", "options", "inputs"),
    "differential": ("fusion", "options", "seed", "inputs", "tolerance"),
}


def _hex_ok(h, dtype):
    if not isinstance(h, str) or not HEX.match(h):
        return False
    if dtype == "bool":
        return h in ("0x0", "0x1")
    return len(h) == 2 + WIDTH[dtype]


def _tensor(t, where, errs, is_output=False):
    dt = t.get("dtype")
    if dt not in WIDTH:
        errs.append("%s: bad dtype %r" % (where, dt))
        return
    shape = t.get("shape")
    if not isinstance(shape, list) or not all(
            isinstance(s, int) and s >= 0 for s in shape):
        errs.append("%s: bad shape %r" % (where, shape))
        return
    strides = t.get("strides")
    if strides is not None:
        if is_output:
            errs.append("%s: outputs are contiguous (no strides)" % where)
        if not isinstance(strides, list) or len(strides) != len(shape):
            errs.append("%s: strides do not match the rank" % where)
            return
    numel = 1
    for s in shape:
        numel *= s
    if strides is None:
        storage = numel
    elif numel == 0:
        storage = 0
    else:
        storage = 1 + sum((s - 1) * st for s, st in zip(shape, strides))
    data = t.get("data")
    if data is None:
        errs.append("%s: no data" % where)
        return
    if isinstance(data, dict):
        rep, cnt = data.get("repeat"), data.get("count")
        if not isinstance(rep, list) or not rep or cnt != storage:
            errs.append("%s: repeat data count %r != storage %d"
                        % (where, cnt, storage))
            return
        vals = rep
    else:
        vals = data
        if len(vals) != storage:
            errs.append("%s: %d data elements, storage needs %d"
                        % (where, len(vals), storage))
    for v in vals:
        if not _hex_ok(v, dt):
            errs.append("%s: bad %s hex %r" % (where, dt, v))
            break


def _check(c, where, errs, n_elems=None):
    if not isinstance(c, dict):
        errs.append("%s: check is not an object" % where)
        return
    k = c.get("kind")
    if k == "exact":
        pass
    elif k == "ulp":
        if not (isinstance(c.get("max"), int) or
                isinstance(c.get("maxPerElement"), list)):
            errs.append("%s: ulp check needs max or maxPerElement" % where)
    elif k == "abs":
        b = c.get("bounds")
        if not isinstance(b, list) or not all(_hex_ok(x, "f64") for x in b):
            errs.append("%s: abs check needs f64 hex bounds" % where)
    elif k == "sumBound":
        pass
    else:
        errs.append("%s: unknown check kind %r" % (where, k))
    alt = c.get("alternatives")
    if alt is not None and not isinstance(alt, dict):
        errs.append("%s: alternatives must be an object" % where)


def _walk_tensors(obj, where, errs):
    """Validate every tensor-like object (has dtype + shape + data)."""
    if isinstance(obj, dict):
        if "dtype" in obj and "shape" in obj and "data" in obj:
            _tensor(obj, where, errs, is_output="check" in obj)
            if "check" in obj:
                _check(obj["check"], where, errs)
            return
        for k in sorted(obj):
            _walk_tensors(obj[k], where + "." + k, errs)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _walk_tensors(v, "%s[%d]" % (where, i), errs)


def validate(doc, name="<doc>"):
    errs = []
    for k in TOP:
        if k not in doc:
            errs.append("%s: missing top-level field %r" % (name, k))
    if errs:
        return errs
    if doc["suite"] != "kiln-conformance":
        errs.append("%s: suite is %r" % (name, doc["suite"]))
    cat = doc["category"]
    if cat not in CATEGORY_FIELDS:
        errs.append("%s: unknown category %r" % (name, cat))
    notes = doc["notes"]
    ids = set()
    count = 0
    for gi, g in enumerate(doc["testGroups"]):
        for k in ("type", "comment", "tests"):
            if k not in g:
                errs.append("%s: group %d lacks %r" % (name, gi, k))
        for t in g.get("tests", []):
            count += 1
            where = "%s: tcId %s" % (name, t.get("tcId"))
            tc = t.get("tcId")
            if not isinstance(tc, int) or tc < 1 or tc in ids:
                errs.append("%s: tcId missing, < 1 or duplicated" % where)
            ids.add(tc)
            if not isinstance(t.get("comment"), str):
                errs.append("%s: no comment" % where)
            for f in t.get("flags", None) or []:
                if f not in notes:
                    errs.append("%s: flag %r not defined in notes"
                                % (where, f))
            if not isinstance(t.get("flags"), list):
                errs.append("%s: flags must be a list" % where)
            if t.get("result") not in RESULTS:
                errs.append("%s: bad result %r" % (where, t.get("result")))
            for k in CATEGORY_FIELDS.get(cat, ()):
                if k not in t:
                    errs.append("%s: missing field %r" % (where, k))
            if cat == "options.parse":
                if t.get("result") == "valid":
                    if not isinstance(t.get("canonical"), str):
                        errs.append("%s: valid test without canonical" % where)
                else:
                    e = t.get("error", {})
                    if (e.get("kind") not in KINDS or
                            not isinstance(e.get("offset"), int) or
                            not isinstance(e.get("token"), str)):
                        errs.append("%s: bad error %r" % (where, e))
            if cat == "numerics" and t.get("result") != "invalid":
                if not t.get("outputs"):
                    errs.append("%s: no outputs" % where)
            if cat == "numerics" and t.get("result") == "invalid":
                if "status" not in t.get("error", {}):
                    errs.append("%s: invalid test without error.status"
                                % where)
            _walk_tensors(t, where, errs)
            if len(errs) > 50:
                return errs
    if count != doc["numberOfTests"]:
        errs.append("%s: numberOfTests %d but %d tests"
                    % (name, doc["numberOfTests"], count))
    if ids and ids != set(range(1, count + 1)):
        errs.append("%s: tcIds are not 1..%d" % (name, count))
    return errs


def validate_file(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        return ["%s: cannot read: %s" % (path, e)]
    return validate(doc, path)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    bad = 0
    for p in argv:
        errs = validate_file(p)
        for e in errs:
            print(e, file=sys.stderr)
        bad += bool(errs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
