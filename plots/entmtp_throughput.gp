# entmtp_throughput.gp — EntMTP §3.3's throughput frontier: tok/s of every timed hull tree against
# its node count, the throughput-Pareto bank, the static task tree (the fastest) and the published
# default tree mc_sim_7b_63 (`arbor entmtp plot --bank`). Variables: datafile (blocks 0..3: hull
# trees, bank, static, default; columns n, tok_s, depth), title_text, clock_text (wall | cpu).
set title title_text font ',11'
set grid lc rgb '#dddddd'
set xlabel 'tree nodes (anchor included)'
set ylabel sprintf('tok/s (%s clock, prefill included)', clock_text)
set key top right font ',9'
set logscale x 2
set xrange [2:128]
plot datafile index 0 using 1:2 with points pt 7 ps 0.9 lc rgb '#1f77b4' title 'hull trees (timed)', \
     datafile index 1 using 1:2 with linespoints pt 6 ps 1.6 lw 1.5 lc rgb '#cc0000' title 'bank', \
     datafile index 2 using 1:2 with points pt 3 ps 2.4 lw 2 lc rgb '#2ca02c' title 'static task tree', \
     datafile index 3 using 1:2 with points pt 5 ps 1.4 lc rgb '#444444' title 'default mc\_sim\_7b\_63'
