# speedup.gp — GOOSE Fig. 3: wall-clock speedup over AR, one panel per model, bars per
# method clustered by dataset. Variables set by `arbor plot`: datafile, nblocks, blocks
# (panel titles, space-separated), ncols (last data column).
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics lc rgb '#dddddd'
set ylabel 'speedup over AR (x)'
set yrange [0:1.15<*]   # the AR line (1x) always in view
set key below horizontal font ',9'
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb '#888888'
set xtics font ',9'
set multiplot layout 1, nblocks title 'Speedup over autoregressive decoding'
do for [b = 0:nblocks - 1] {
    set title word(blocks, b + 1)
    plot for [i = 2:ncols] datafile index b using i:xtic(1) title columnheader(i)
}
unset multiplot
