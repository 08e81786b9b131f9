# accept_hist.gp — distribution of accepted draft tokens per step (bonus excluded), one
# bar per method at each length. Variables: datafile (columns: k, one share per method),
# ncols, title_text.
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set grid ytics lc rgb '#dddddd'
set xlabel 'accepted draft tokens per step (k)'
set ylabel 'share of steps'
set yrange [0:*]
set key top right font ',9'
set title title_text
plot for [i = 2:ncols] datafile using i:xtic(1) title columnheader(i)
