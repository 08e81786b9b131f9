/* cli.h — the `arbor` subcommands and small helpers shared by their parsers.
 *
 * Adding a subcommand: write harness/cmd_<name>.c with
 *     int arb_cmd_<name>(int argc, char **argv)   // argv[0] is "<name>"
 * that parses argv with the option table of opts.h (usage on -h/--help, exit 0; a
 * usage error returns 2) and returns 0 / non-zero, declare it below, add one row to
 * the table in main.c and the file to harness/meson.build, and rerun
 * scripts/cli_reference.py for README's Command reference (docs/cli.md: spellings).
 * Only main.c calls exit(); commands return their status.
 */
#ifndef ARB_CLI_H
#define ARB_CLI_H

#include <stdbool.h>

int arb_cmd_fetch_model(int argc, char **argv);
int arb_cmd_run(int argc, char **argv);
int arb_cmd_report(int argc, char **argv);
int arb_cmd_compare(int argc, char **argv);
int arb_cmd_merge(int argc, char **argv);
int arb_cmd_plot(int argc, char **argv);
int arb_cmd_inspect(int argc, char **argv);
int arb_cmd_datasets(int argc, char **argv);
int arb_cmd_tokenize(int argc, char **argv);
int arb_cmd_generate(int argc, char **argv);
int arb_cmd_check_lossless(int argc, char **argv);
int arb_cmd_bench_harness(int argc, char **argv);
int arb_cmd_bench(int argc, char **argv);
int arb_cmd_dte_depth(int argc, char **argv);
int arb_cmd_synth_model(int argc, char **argv);
int arb_cmd_reproduce(int argc, char **argv);
int arb_cmd_distill(int argc, char **argv);
int arb_cmd_train(int argc, char **argv);
int arb_cmd_datastore(int argc, char **argv);
int arb_cmd_entmtp(int argc, char **argv);
int arb_cmd_nde(int argc, char **argv);       /* cmd_nde.c: data | train | eval */
int arb_cmd_nde_train(int argc, char **argv); /* `arbor train nde` */

/* True if argv has -h or --help (for the commands still parsing by hand). */
bool arb_cli_wants_help(int argc, char **argv);

#endif
