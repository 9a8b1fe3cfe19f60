# `duet bench --workload serving --rate-sweep` under `mpirun -np 2` spreads each round's rates over
# the ranks: its report's sweeps must equal one process's with --sweep-width 2, byte for byte, and
# the run must say it used 2 ranks.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(ARGS --log-level warn bench --workload serving --model llama2-7b --requests 100 --rate 2 --rate-sweep
         --slo-ttft-ms 500 --slo-tpot-ms 40 --seq-len 256 --gen-len 32 --no-verdict-exit)
execute_process(COMMAND ${DUET} ${ARGS} --sweep-width 2 --report ${WORK}/one.json
                RESULT_VARIABLE rc1 OUTPUT_VARIABLE out1 ERROR_VARIABLE err1)
execute_process(COMMAND ${MPIRUN} --allow-run-as-root --oversubscribe -np 2 ${DUET} ${ARGS} --report ${WORK}/two.json
                RESULT_VARIABLE rc2 OUTPUT_VARIABLE out2 ERROR_VARIABLE err2)
if(NOT rc1 EQUAL 0 OR NOT rc2 EQUAL 0)
    message(FATAL_ERROR "exit codes: single ${rc1}, mpirun ${rc2}\n${out1}\n${err1}\n---\n${out2}\n${err2}")
endif()
if(NOT out2 MATCHES "rate sweep: 2 rates per round, on 2 ranks \\(MPI\\)")
    message(FATAL_ERROR "mpirun run did not spread over 2 ranks:\n${out2}\n${err2}")
endif()
file(READ ${WORK}/one.json one)
file(READ ${WORK}/two.json two)
foreach(side baseline target)
    string(JSON s1 GET "${one}" serving ${side} rate_sweep)
    string(JSON s2 GET "${two}" serving ${side} rate_sweep)
    if(NOT s1 STREQUAL s2)
        message(FATAL_ERROR "${side} sweeps differ between --sweep-width 2 and mpirun -np 2:\n${s1}\n---\n${s2}")
    endif()
endforeach()
message(STATUS "mpirun -np 2 and --sweep-width 2 agree")
