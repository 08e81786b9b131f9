# dte_depth.gp — DTE Fig. 1: per-depth OTLP acceptance rate of each OT verifier for n i.i.d.
# draws (left) and the L1 distance between target and draft laws (right), along draft paths
# from roots of sampled target trajectories (`arbor dte-depth --plot DIR`). Variables:
# datafile (columns: depth, nodes, L1, then one acceptance rate per verifier), ncols,
# title_text.
set multiplot layout 1,2 title title_text font ',11'
set grid lc rgb '#dddddd'
set xlabel 'depth of the drafted node (0 = first draft token)'
set xtics 1
set ylabel 'acceptance rate'
set yrange [0:1]
set key top right font ',9'
plot for [i = 4:ncols] datafile using 1:i with linespoints pt 7 ps 0.7 lw 1.5 title columnheader(i)
set ylabel 'L1(p, q)'
set yrange [0:2]
unset key
plot datafile using 1:3 with linespoints pt 7 ps 0.7 lw 1.5 lc rgb '#444444' title 'L1(p,q)'
unset multiplot
