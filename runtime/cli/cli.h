/*
** cli.h -- the subcommands of build/kiln.  Each returns the process exit
** status: 0 success, 1 a failure of the thing asked for (invalid options,
** failed tests), 2 a usage error.
*/
#ifndef KILN_CLI_H
#define KILN_CLI_H

int kiln_cmd_options(int argc, char **argv);
int kiln_cmd_fusion(int argc, char **argv);
int kiln_cmd_run(int argc, char **argv);
int kiln_cmd_conform(int argc, char **argv);
int kiln_cmd_bench(int argc, char **argv);
int kiln_cmd_cache(int argc, char **argv);

/* `kiln bench gpu` (runtime/cli/bench_gpu.c); argv[0] is "gpu". */
int kiln_bench_gpu(int argc, char **argv);

/* 1 when argv holds -h or --help before any "--". */
int kiln_cli_wants_help(int argc, char **argv);

#endif
