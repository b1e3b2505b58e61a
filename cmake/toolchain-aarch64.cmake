# Cross-compiles the engine for 64-bit ARM Linux (aarch64) on a Debian x86-64 machine with the
# cross compiler (g++-aarch64-linux-gnu) and the libraries as :arm64 multiarch packages
# (scripts/cross_aarch64.sh installs both). The programs run on the build machine through
# qemu-aarch64 (user-mode emulation): ctest and doctest's test discovery use it as the launcher.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Debian's multiarch layout: the :arm64 libraries, their CMake packages and pkg-config files live
# under /usr/lib/aarch64-linux-gnu; architecture-independent packages (Eigen, CLI11, doctest,
# nlohmann-json) under /usr/share and /usr/include, shared with the host.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
# Programs found on the build machine (python3, ccache), libraries and headers for the target.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
find_program(GPEN_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${GPEN_QEMU_AARCH64})
