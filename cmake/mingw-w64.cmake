# Cross-compiling for Windows x86_64 with mingw-w64 (Debian's
# gcc-mingw-w64-x86-64; `make windows` installs it). The posix flavour of
# the compiler: its C runtime carries winpthreads, which the pool's
# threads and the library's thread-locals use on Windows too. Programs
# the build runs (the C tests) run under Wine (scripts/wine_run.sh).
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(ONNXIO_MINGW_TRIPLE x86_64-w64-mingw32)
find_program(CMAKE_C_COMPILER NAMES ${ONNXIO_MINGW_TRIPLE}-gcc-posix ${ONNXIO_MINGW_TRIPLE}-gcc REQUIRED)
find_program(CMAKE_RC_COMPILER NAMES ${ONNXIO_MINGW_TRIPLE}-windres)
set(CMAKE_FIND_ROOT_PATH /usr/${ONNXIO_MINGW_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# No DLL of the toolchain's beside the programs: libgcc and winpthreads
# are linked statically, so onnxio.exe, libonnxio.dll and the tests need
# only what Windows has.
# C99 printf (%zu, %llu) in the C runtime's stdio.
set(CMAKE_C_FLAGS_INIT "-D__USE_MINGW_ANSI_STDIO=1")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static-libgcc -Wl,-Bstatic,--whole-archive -lwinpthread -Wl,--no-whole-archive,-Bdynamic")
set(CMAKE_CROSSCOMPILING_EMULATOR ${CMAKE_CURRENT_LIST_DIR}/../scripts/wine_run.sh)
