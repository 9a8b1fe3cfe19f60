# duet_test_paths: DUET_SOURCE_DIR, DUET_SHARED_DIR, DUET_BINARY_DIR for tests and benchmarks,
# compiled into one object so that no other compile line holds an absolute path (ccache hits
# across clones; tests/common/duet_test_paths.h).
function(duet_define_test_paths)
    if(TARGET duet_test_paths)
        return()
    endif()
    add_library(duet_test_paths STATIC ${CMAKE_SOURCE_DIR}/tests/common/duet_test_paths.cpp)
    target_compile_definitions(duet_test_paths PRIVATE
        DUET_TEST_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
        DUET_TEST_SHARED_DIR="${DUET_SHARED_DIR}"
        DUET_TEST_BINARY_DIR="${CMAKE_BINARY_DIR}")
endfunction()

# duet_use_test_paths(<target>): the target sees DUET_SOURCE_DIR etc. (force-included header).
function(duet_use_test_paths target)
    duet_define_test_paths()
    target_include_directories(${target} PRIVATE ${CMAKE_SOURCE_DIR}/tests/common)
    target_compile_options(${target} PRIVATE -include duet_test_paths.h)
    target_link_libraries(${target} PRIVATE duet_test_paths)
endfunction()

# Test sources compile at DUET_TEST_OPT (-O1) in Release and RelWithDebInfo builds: the optimiser
# spends a third of a gtest file's -O3 compile on expanded assertions that run once, while the
# libraries under test keep the build type's flags (docs/testing.md, "Build time"). Without
# -march flags and with -std=c++20 (no FP contraction) the test code computes the same bits.
set(DUET_TEST_OPT "-O1" CACHE STRING "Optimisation flag of the test sources in optimised builds (empty: the build type's)")

# duet_add_test(<name> SOURCES a.cpp ... LIBS lib ... [LABELS unit|model|server|slow])
# One gtest executable registered with ctest; label defaults to "unit".
function(duet_add_test name)
    cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
    if(NOT T_LABELS)
        set(T_LABELS unit)
    endif()
    add_executable(${name} ${T_SOURCES})
    if(DUET_TEST_OPT)
        target_compile_options(${name} PRIVATE $<$<CONFIG:Release,RelWithDebInfo>:${DUET_TEST_OPT}>)
    endif()
    target_link_libraries(${name} PRIVATE ${T_LIBS} duet_test_paths GTest::gtest GTest::gtest_main)
    duet_use_test_paths(${name})
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
endfunction()

# duet_isa_source(<file> <isa>) compiles one kernel file for an instruction set; the
# code inside is only called after core/cpu_features.h says the CPU has that ISA.
function(duet_isa_source file isa)
    if(isa STREQUAL "avx2")
        set(flags -mavx2 -mfma -mf16c)
    elseif(isa STREQUAL "avx512")
        set(flags -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16 -mgfni)
    else()
        message(FATAL_ERROR "duet_isa_source: unknown isa '${isa}' (allowed: avx2, avx512)")
    endif()
    set_source_files_properties(${file} PROPERTIES COMPILE_OPTIONS "${flags}")
endfunction()
