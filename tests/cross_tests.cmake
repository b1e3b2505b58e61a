# The tests of a cross build (cmake/toolchain-aarch64.cmake, scripts/cross_aarch64.sh): the CPU op
# tests against their fixtures, GPEN end to end against the PyTorch fixtures (test_gpen_e2e: raw
# output max 1e-3, mean 1e-4; once more on the Winograd forms), RetinaFace mobilenet0.25 on the
# shared photos and the image codecs, run through CMAKE_CROSSCOMPILING_EMULATOR
# (qemu-aarch64) under the label "aarch64". Every test runs on the baseline path of the target
# (kernels/cpu/isa.h: NEON on aarch64, GPEN_CPU_ISA=neon). Included by tests/CMakeLists.txt in place of the native
# test set; `gpen_cross_tests` builds them all.
set(GPEN_CROSS_TESTS
    test_cpu_ops test_cpu_isa test_cpu_conv2d_fast test_cpu_conv2d_1x1 test_cpu_conv2d_isa
    test_cpu_conv2d_small_winograd test_cpu_conv2d_wino_s2 test_cpu_modconv test_cpu_modconv_crop
    test_cpu_modconv_up_crop test_cpu_winograd test_cpu_winograd_up test_cpu_row_kernels test_cpu_warp
    test_cpu_detect_post test_cpu_max_pool test_cpu_pad_reflect test_cpu_pixel_unshuffle test_cpu_gfpgan_ops
    test_cpu_range_steal test_cpu_parse_labels test_cpu_core_distance
    test_gpen_e2e test_retinaface test_image test_image_codecs)
add_custom_target(gpen_cross_tests)
foreach(name ${GPEN_CROSS_TESTS})
  add_executable(${name} EXCLUDE_FROM_ALL ${CMAKE_CURRENT_SOURCE_DIR}/${name}.cpp)
  target_link_libraries(${name} PRIVATE gpen_test_main)
  gpen_strict_warnings(${name})
  add_dependencies(gpen_cross_tests ${name})
  # Emulated, GPEN-256 end to end takes minutes where it takes seconds natively.
  doctest_discover_tests(${name} TEST_PREFIX "${CMAKE_SYSTEM_PROCESSOR}/${name}:" PROPERTIES LABELS aarch64
                         ENVIRONMENT GPEN_CPU_ISA=neon TIMEOUT 1800 WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  if(name STREQUAL "test_gpen_e2e")  # as tests/CMakeLists.txt registers it natively
    doctest_discover_tests(${name} TEST_PREFIX "${CMAKE_SYSTEM_PROCESSOR}/winograd/${name}:" PROPERTIES LABELS aarch64
                           ENVIRONMENT "GPEN_CPU_ISA=neon;GPEN_CPU_CONV=winograd" TIMEOUT 1800
                           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} EXTRA_ARGS --no-colors --no-version
                           TEST_LIST ${name}_WINOGRAD_TESTS)
  endif()
endforeach()
