# ps_pt.gp — GOOSE Fig. 5a: mean spine (context-match) acceptance p_s and transition
# acceptance p_t per dataset, with the ratio p_s/p_t above each pair.
# Variables: datafile (columns: dataset p_s p_t ratio), title_text.
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set grid ytics lc rgb '#dddddd'
set ylabel 'acceptance rate'
set yrange [0:1.15]
set key top right
set title title_text
plot datafile using 2:xtic(1) title 'p_s (spine)' lc rgb '#2b83ba', \
     '' using 3 title 'p_t (transitions)' lc rgb '#fdae61', \
     '' using ($0):(($2 > $3 ? $2 : $3) + 0.05):(sprintf('%.1fx', $4)) with labels notitle font ',9'
