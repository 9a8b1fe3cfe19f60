# duet_add_test(<name> SOURCES a.cpp ... LIBS lib ... [LABELS unit|model|server|slow])
# One gtest executable registered with ctest; label defaults to "unit".
function(duet_add_test name)
    cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
    if(NOT T_LABELS)
        set(T_LABELS unit)
    endif()
    add_executable(${name} ${T_SOURCES})
    target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
    target_compile_definitions(${name} PRIVATE
        DUET_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
        DUET_SHARED_DIR="${DUET_SHARED_DIR}"
        DUET_BINARY_DIR="${CMAKE_BINARY_DIR}")
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
endfunction()

# duet_isa_source(<file> <isa>) compiles one kernel file for an instruction set; the
# code inside is only called after core/cpu_features.h says the CPU has that ISA.
function(duet_isa_source file isa)
    if(isa STREQUAL "avx2")
        set(flags -mavx2 -mfma -mf16c)
    elseif(isa STREQUAL "avx512")
        set(flags -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16)
    else()
        message(FATAL_ERROR "duet_isa_source: unknown isa '${isa}' (allowed: avx2, avx512)")
    endif()
    set_source_files_properties(${file} PROPERTIES COMPILE_OPTIONS "${flags}")
endfunction()
