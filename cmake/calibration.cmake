# The calibration harnesses. The CPU one needs OpenBLAS (pkg-config openblas) and an MPI C library
# (Open MPI); the CUDA one needs the CUDA toolkit with cuBLASLt, NCCL and MPI. Each is optional: when
# its libraries are missing, dtsim calibrate reports that the backend was not built.
pkg_check_modules(OPENBLAS IMPORTED_TARGET openblas)
find_package(MPI COMPONENTS CXX)
# The harnesses use MPI's C API only: leave out the deprecated C++ bindings.
set(DTSIM_MPI_DEFINITIONS OMPI_SKIP_MPICXX MPICH_SKIP_MPICXX)

set(DTSIM_CPU_CALIBRATION OFF)
if(OPENBLAS_FOUND AND MPI_CXX_FOUND)
  set(DTSIM_CPU_CALIBRATION ON)
  add_executable(dtsim_calibrate_cpu
    calibration/cpu/calibrate_cpu_main.cpp
    calibration/cpu/cpu_kernels.cpp
    calibration/cpu/mpi_collectives.cpp)
  target_compile_options(dtsim_calibrate_cpu PRIVATE ${DTSIM_WARNING_FLAGS})
  # MPI first: libsimgrid (the flow network model) also defines MPI_Init (SMPI), and the first library
  # that defines a symbol wins.
  target_link_libraries(dtsim_calibrate_cpu PRIVATE MPI::MPI_CXX PkgConfig::OPENBLAS dtsim_lib)
  target_compile_definitions(dtsim_calibrate_cpu PRIVATE ${DTSIM_MPI_DEFINITIONS})

  add_executable(dtsim_mlp_train calibration/cpu/mlp_train_main.cpp)
  target_compile_options(dtsim_mlp_train PRIVATE ${DTSIM_WARNING_FLAGS})
  target_link_libraries(dtsim_mlp_train PRIVATE MPI::MPI_CXX PkgConfig::OPENBLAS dtsim_lib)
  target_compile_definitions(dtsim_mlp_train PRIVATE ${DTSIM_MPI_DEFINITIONS})
  set_property(SOURCE sim/cli/calibrate_command.cpp APPEND PROPERTY COMPILE_DEFINITIONS DTSIM_HAVE_CPU_CALIBRATION)
  install(TARGETS dtsim_calibrate_cpu dtsim_mlp_train RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  message(STATUS "dtsim: CPU calibration harness (OpenBLAS, MPI) enabled")
else()
  message(STATUS "dtsim: CPU calibration harness disabled (OpenBLAS or MPI not found)")
endif()

set(DTSIM_CUDA_CALIBRATION OFF)
if(DTSIM_WITH_CUDA)
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  find_package(CUDAToolkit QUIET)
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND MPI_CXX_FOUND)
    find_library(DTSIM_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(DTSIM_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  endif()
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND TARGET CUDA::cublasLt AND DTSIM_NCCL_LIBRARY
     AND DTSIM_NCCL_INCLUDE AND MPI_CXX_FOUND)
    # Ampere and Hopper machine code (PTX of the newest for later GPUs) unless the cache says otherwise.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
    endif()
    enable_language(CUDA)
    set(DTSIM_CUDA_CALIBRATION ON)
    add_executable(dtsim_calibrate_cuda
      calibration/cuda/calibrate_cuda_main.cpp
      calibration/cuda/cuda_kernels.cu
      calibration/cuda/cublaslt_gemm.cpp
      calibration/cuda/nccl_collectives.cpp)
    set_target_properties(dtsim_calibrate_cuda PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
    target_compile_options(dtsim_calibrate_cuda PRIVATE
      "$<$<COMPILE_LANGUAGE:CXX>:${DTSIM_WARNING_FLAGS}>"
      "$<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>")
    target_include_directories(dtsim_calibrate_cuda SYSTEM PRIVATE ${DTSIM_NCCL_INCLUDE})
    target_link_libraries(dtsim_calibrate_cuda PRIVATE MPI::MPI_CXX dtsim_lib CUDA::cudart CUDA::cublasLt
                                                       ${DTSIM_NCCL_LIBRARY})
    set_property(SOURCE sim/cli/calibrate_command.cpp APPEND PROPERTY COMPILE_DEFINITIONS DTSIM_HAVE_CUDA_CALIBRATION)
    install(TARGETS dtsim_calibrate_cuda RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
    message(STATUS "dtsim: CUDA calibration harness (cuBLASLt, NCCL, MPI) enabled")
  else()
    message(STATUS "dtsim: CUDA calibration harness disabled (CUDA toolkit, cuBLASLt, NCCL or MPI not found)")
  endif()
endif()
