/*
** cli.h -- the subcommands of build/kiln.  The helpers they share with the
** conformance runner (arguments, output files, formats) are tool/tool.h's.
**
** Each subcommand returns the process exit status: 0 success, 1 a failure
** of the thing asked for (invalid options, failed tests), 2 a usage error.
** Contracts every subcommand keeps (docs/runtime.md, "Command line"):
**   - Arguments go through cli_next (one parser): `--opt VALUE` and
**     `--opt=VALUE` both work, `--` ends the options, and an unknown or
**     malformed option is a usage error naming the option and `--help`.
**   - Output paths are checked with cli_out_check before any work starts;
**     every file is written through cli_out (a temporary file in the same
**     directory, fsync'ed, then renamed over the path), so a reader or a
**     concurrent run sees the old file or the new one, never a mix.
**   - On failure nothing is printed to stdout: results are printed only
**     once the command knows it succeeded.
*/
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include "tool/tool.h"

int kiln_cmd_options(int argc, char **argv);
int kiln_cmd_fusion(int argc, char **argv);
int kiln_cmd_run(int argc, char **argv);
/* The conformance runner's entry (conformance/runner.c, declared in
** conformance/conform.h too): the CLI calls the runner, never the reverse. */
int kiln_cmd_conform(int argc, char **argv);
int kiln_cmd_bench(int argc, char **argv);
int kiln_cmd_cache(int argc, char **argv);

/* `kiln bench gpu` (runtime/cli/bench_gpu.c); argv[0] is "gpu". */
int kiln_bench_gpu(int argc, char **argv);
/* `kiln bench kdb` (runtime/cli/bench_kdb.c); argv[0] is "kdb". */
int kiln_bench_kdb(int argc, char **argv);

#endif
