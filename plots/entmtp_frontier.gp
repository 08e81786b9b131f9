# entmtp_frontier.gp — EntMTP Fig. 1: every tree Algorithm 1 produced (score_all's mean accept
# length against its node count, one colour per D_max), the acceptance Pareto hull, and the hull
# trees' debiased (self-rollout) means (`arbor entmtp plot`). Variables: datafile (blocks 0..3:
# D_max 1..4, columns n, a; block 4: hull, columns n, a, a_self), title_text.
set title title_text font ',11'
set grid lc rgb '#dddddd'
set xlabel 'tree nodes (anchor included)'
set ylabel 'mean accept length per step (drafts + 1)'
set key bottom right font ',9'
plot for [i = 0:3] datafile index i using 1:2 with points pt 7 ps 0.8 title sprintf('D_{max} = %d', i + 1), \
     datafile index 4 using 1:2 with linespoints pt 3 ps 1.6 lw 1.5 lc rgb '#cc0000' title 'hull (score\_all)', \
     datafile index 4 using 1:3 with linespoints pt 6 ps 1.2 lw 1.2 lc rgb '#444444' dt 2 title 'hull, self-rollout'
