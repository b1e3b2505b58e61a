# The system libraries the engine links through pkg-config, looked up the same way when the engine
# is built and when a program uses its installed CMake package (GpenEngineConfig.cmake includes
# this file); the pkg-config file (gpen-engine.pc) requires the same modules.
set(GPEN_PKG_ZIP libzip)          # converter: the zip container of PyTorch checkpoints
# photo: the codecs OpenCV links on Debian, so that pixels equal cv2.imread's.
set(GPEN_PKG_IMAGE_CODECS libjpeg libpng libwebp libwebpdemux libwebpmux)
set(GPEN_PKG_CRYPTO libcrypto)    # fetch: the sha256 of downloads (OpenSSL)
find_package(PkgConfig REQUIRED)
pkg_check_modules(GPEN_ZIP REQUIRED QUIET IMPORTED_TARGET ${GPEN_PKG_ZIP})
pkg_check_modules(GPEN_IMAGE_CODECS REQUIRED QUIET IMPORTED_TARGET ${GPEN_PKG_IMAGE_CODECS})
pkg_check_modules(GPEN_CRYPTO REQUIRED QUIET IMPORTED_TARGET ${GPEN_PKG_CRYPTO})
find_package(Threads REQUIRED)
