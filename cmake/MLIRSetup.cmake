# Finds MLIR 22 (Debian's libmlir-22-dev) and sets up TableGen, AddMLIR and the
# include paths for the compiler half of the project. Everything MLIR links
# through libMLIR.so (MLIR_LINK_MLIR_DYLIB), which keeps links fast.

if(NOT MLIR_DIR)
  set(MLIR_DIR /usr/lib/llvm-22/lib/cmake/mlir)
endif()
find_package(MLIR REQUIRED CONFIG)
if(NOT MLIR_VERSION_MAJOR AND LLVM_VERSION_MAJOR)
  set(MLIR_VERSION_MAJOR ${LLVM_VERSION_MAJOR})
endif()
if(NOT LLVM_VERSION_MAJOR EQUAL 22)
  message(FATAL_ERROR "cgc needs MLIR 22, found LLVM ${LLVM_PACKAGE_VERSION} at ${MLIR_DIR}")
endif()
message(STATUS "Using MLIRConfig.cmake in: ${MLIR_DIR}")
# Part of the CPU driver's compiler identity (precompiled programs made
# against another MLIR are compiled again): runtime/drivers/cpu.
if(TARGET cgc_cpu_identity)
  set_property(TARGET cgc_cpu_identity PROPERTY CGC_MLIR_VERSION ${LLVM_PACKAGE_VERSION})
endif()
message(STATUS "Using LLVMConfig.cmake in: ${LLVM_DIR}")

set(MLIR_LINK_MLIR_DYLIB ON)
set(LLVM_LINK_LLVM_DYLIB ON)

# Debian's MLIRConfig names the tablegen tools without a path.
if(NOT IS_ABSOLUTE "${MLIR_TABLEGEN_EXE}")
  find_program(CGC_MLIR_TBLGEN mlir-tblgen HINTS ${LLVM_TOOLS_BINARY_DIR} REQUIRED)
  set(MLIR_TABLEGEN_EXE ${CGC_MLIR_TBLGEN})
endif()

list(APPEND CMAKE_MODULE_PATH "${MLIR_CMAKE_DIR}" "${LLVM_CMAKE_DIR}")
set(LLVM_RUNTIME_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/bin)
set(LLVM_LIBRARY_OUTPUT_INTDIR ${CMAKE_BINARY_DIR}/lib)
set(MLIR_BINARY_DIR ${CMAKE_BINARY_DIR})

include(TableGen)
include(AddLLVM)
include(AddMLIR)

# TableGen reads include paths from the directory property.
include_directories(SYSTEM ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
include_directories(${PROJECT_SOURCE_DIR}/dialects ${PROJECT_SOURCE_DIR})
add_custom_target(cgc-docs ALL)
add_dependencies(cgc-docs mlir-doc)

separate_arguments(LLVM_DEFINITIONS_LIST NATIVE_COMMAND ${LLVM_DEFINITIONS})

# Compile options for every target that uses MLIR/LLVM headers.
add_library(cgc_mlir_flags INTERFACE)
target_include_directories(cgc_mlir_flags SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
target_include_directories(cgc_mlir_flags INTERFACE
  ${PROJECT_SOURCE_DIR}/dialects ${PROJECT_BINARY_DIR}/dialects
  ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
target_compile_definitions(cgc_mlir_flags INTERFACE ${LLVM_DEFINITIONS_LIST})
target_compile_options(cgc_mlir_flags INTERFACE -fno-exceptions -Wall -Wno-unused-parameter)

# cgc_add_mlir_library(<name> SOURCES ... [DEPENDS ...] [MLIR_LIBS ...] [LINK_LIBS ...])
# A static library of the compiler built against libMLIR.so.
function(cgc_add_mlir_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS;MLIR_LIBS;LINK_LIBS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_link_libraries(${name} PUBLIC cgc_mlir_flags ${ARG_LINK_LIBS})
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  mlir_target_link_libraries(${name} PUBLIC MLIRIR MLIRSupport ${ARG_MLIR_LIBS})
  target_link_libraries(${name} PUBLIC LLVM)
endfunction()

if(NOT LLVM_EXTERNAL_LIT)
  set(LLVM_EXTERNAL_LIT ${LLVM_TOOLS_BINARY_DIR}/lit CACHE STRING "lit")
endif()
