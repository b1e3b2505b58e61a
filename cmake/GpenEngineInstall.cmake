# `cmake --install build --prefix P`: the `gpen` CLI and the data it finds beside itself, the
# engine's static libraries and public headers, a CMake package (find_package(GpenEngine CONFIG)
# -> GpenEngine::engine), a pkg-config file (gpen-engine.pc), the licence and the changelog.
# docs/install.md shows a program built against them; tests/test_install.sh builds it.
include(CMakePackageConfigHelpers)

# The public headers: what a C++ program needs to open a model, plan it, run it and restore a photo
# (engine/photo/restorer.h: Restorer), with every project header these include (checked by
# scripts/check_layers.py). The others are the engine's own business and are not installed.
set(GPEN_PUBLIC_HEADERS
  engine/core/affine.h engine/core/dtype.h engine/core/error.h engine/core/image.h engine/core/tensor.h
  engine/core/version.h
  kernels/params.h kernels/cpu/conv_select.h kernels/cpu/core_distance.h kernels/cpu/cpu_options.h
  kernels/cpu/detect_post.h kernels/cpu/isa.h
  weights/gpw.h
  engine/graph/graph.h
  engine/plan/banding.h engine/plan/memory_budget.h engine/plan/memory_plan.h engine/plan/planner.h
  engine/runtime/backend.h engine/runtime/device.h engine/runtime/executor.h engine/runtime/pipeline_ops.h
  engine/models/f32_network.h engine/models/gpen.h engine/models/gpen_model.h engine/models/gpen_noise.h
  engine/models/parsenet.h
  engine/models/retinaface.h
  engine/models/rrdbnet.h
  engine/photo/face_flow.h engine/photo/image.h engine/photo/pipeline.h engine/photo/restore_plan.h engine/photo/restorer.h
  engine/photo/super_resolution.h)
foreach(h ${GPEN_PUBLIC_HEADERS})
  get_filename_component(dir ${h} DIRECTORY)
  install(FILES ${CMAKE_SOURCE_DIR}/${h} DESTINATION ${GPEN_INSTALL_INCLUDEDIR}/${dir})
endforeach()

install(TARGETS gpen RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/tests/reference/ DESTINATION ${CMAKE_INSTALL_DATADIR}/gpen-engine/reference
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(FILES ${CMAKE_SOURCE_DIR}/LICENSE ${CMAKE_SOURCE_DIR}/CHANGELOG.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(GPEN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/GpenEngine)
install(TARGETS ${GPEN_LAYER_LIBRARIES} gpen_engine EXPORT GpenEngineTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT GpenEngineTargets NAMESPACE GpenEngine:: DESTINATION ${GPEN_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/GpenEngineConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/GpenEngineConfig.cmake INSTALL_DESTINATION ${GPEN_CMAKE_DIR})
# 0.x: a new minor version may change the interface.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/GpenEngineConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/GpenEngineConfig.cmake ${CMAKE_BINARY_DIR}/GpenEngineConfigVersion.cmake
        ${CMAKE_SOURCE_DIR}/cmake/GpenEngineDeps.cmake DESTINATION ${GPEN_CMAKE_DIR})

# pkg-config: the libraries in link order (each before the layers it uses: the reverse of their
# declaration) and what they link, relocatable (prefix from the file's own place).
set(GPEN_PC_LIBS)
set(libs ${GPEN_LAYER_LIBRARIES})
list(REVERSE libs)
foreach(lib ${libs})
  string(APPEND GPEN_PC_LIBS " -l${lib}")
endforeach()
list(TRANSFORM CMAKE_DL_LIBS PREPEND "-l" OUTPUT_VARIABLE dl)
list(JOIN dl " " dl)
string(APPEND GPEN_PC_LIBS " ${OpenMP_CXX_FLAGS} ${CMAKE_THREAD_LIBS_INIT} ${dl}")
if(GPEN_WITH_CUDA)
  string(APPEND GPEN_PC_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -lrt")
endif()
string(REGEX REPLACE " +" " " GPEN_PC_LIBS "${GPEN_PC_LIBS}")
string(STRIP "${GPEN_PC_LIBS}" GPEN_PC_LIBS)
list(JOIN GPEN_PKG_ZIP " " zip)
list(JOIN GPEN_PKG_IMAGE_CODECS " " codecs)
list(JOIN GPEN_PKG_CRYPTO " " crypto)
set(GPEN_PC_REQUIRES "nlohmann_json ${zip} ${codecs} ${crypto}")
file(RELATIVE_PATH GPEN_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${CMAKE_SOURCE_DIR}/cmake/gpen-engine.pc.in ${CMAKE_BINARY_DIR}/gpen-engine.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/gpen-engine.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
