# tau_sweep.gp — GOOSE Fig. 4b: tau against one swept parameter, one line per
# model/dataset/method, with bootstrap 95% intervals. Variables: datafile (blocks of
# "x tau lo hi", each starting with a header line naming the series), nblocks, xlabel_text.
set grid lc rgb '#dddddd'
set xlabel xlabel_text
set ylabel 'tau (tokens per target call)'
set key below font ',9'
set title 'tau vs '.xlabel_text
plot for [b = 0:nblocks - 1] datafile index b using 1:2:3:4 with yerrorlines pt 7 ps 0.8 title columnheader(2)
