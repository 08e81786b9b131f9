# depth_accept.gp — realised acceptance rate by tree depth, one line per method id, pooled
# over its runs (the stored counterpart of DTE Fig. 1). Variables: datafile (columns: depth,
# one rate per method), ncols, title_text.
set grid lc rgb '#dddddd'
set xlabel 'tree depth d'
set xtics 1
set ylabel 'P(accept at d | accepted up to d-1, tree reaches d)'
set yrange [0:1]
set key outside right font ',9'
set title title_text
plot for [i = 2:ncols] datafile using 1:i with linespoints pt 7 ps 0.7 lw 1.5 title columnheader(i)
