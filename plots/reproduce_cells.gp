# reproduce_cells.gp — `arbor reproduce PAPER --plot DIR`: the paper vs ours, one panel per
# table of the paper's claims, one row per cell: our statistic with its 95% bootstrap interval
# (blue, error bar), the paper's value (red diamond) and the claim's threshold (dashed tick).
# Variables: datafile (one block per table, each opening with the header line
# "pos label claim cell ours lo hi paper threshold n verdict op"; op abs<:
# a tick at -threshold as well), nblocks, nrows, ncols,
# title_text, arrays titles[], xlabels[], scales[] (100: fractions drawn in %), nrows_b[].
set multiplot layout nrows, ncols title title_text font ',12'
set grid xtics lc rgb '#dddddd'
set key below horizontal font ',9'
set ytics font ',8' nomirror
set lmargin 34
set offsets graph 0.04, graph 0.04, 0, 0   # a threshold at the data's edge stays visible
do for [b = 1:nblocks] {
    s = scales[b]
    set title titles[b] font ',10'
    set xlabel xlabels[b]
    set yrange [nrows_b[b] - 0.5 : -0.5]
    plot datafile index (b - 1) using ($5 * s):1:($6 * s):($7 * s):ytic(strcol(2)) with xerrorbars \
             pt 7 ps 0.8 lw 1.5 lc rgb '#2b83ba' title 'ours (95% CI)', \
         '' index (b - 1) using ($8 * s):1 with points pt 13 ps 1.4 lc rgb '#d7191c' title 'paper', \
         '' index (b - 1) using ($9 * s):($1 - 0.4):(0):(0.8) with vectors nohead dt 2 lw 1.5 \
             lc rgb '#444444' title 'threshold', \
         '' index (b - 1) using (strcol(12) eq 'abs<' ? -$9 * s : NaN):($1 - 0.4):(0):(0.8) with vectors \
             nohead dt 2 lw 1.5 lc rgb '#444444' notitle
}
unset multiplot
