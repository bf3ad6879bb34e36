/* The onnxio program: what ends it removes a save's temporary files, then
 * cli_main (cli.c), which is the whole command and can also run in-process
 * (tests/fuzz/fuzz_cli.c). */
#include <stddef.h>

#include "common.h"
#include "port.h"

/* SIGINT, SIGTERM, SIGHUP (Ctrl-C and the console closing on Windows): the
 * temporary files of a save in progress (".NAME.onnxio-tmp-XXXXXXXXXXXX"
 * beside its target) are removed (port.c says how the process then ends).
 * onnxio_remove_temporary_files is async-signal-safe by its contract. */
int main(int argc, char **argv)
{
    cli_install_termination(onnxio_remove_temporary_files);
    return cli_main(argc, argv);
}
