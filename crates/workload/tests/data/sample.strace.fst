#flashstack-filetrace 1
0 4242 open 3 /tmp/fs-sample/app.db rdwr|creat
100000 4242 pwrite 3 0 4096 sqlite
200000 4242 fsync 3
300000 4242 open 4 /tmp/fs-sample/app.db-journal rdwr|creat
400000 4242 write 4 12 hex:d9d505f920a163d700000000
500000 4242 fdatasync 4
600000 4242 seek 3 0
700000 4242 write 3 4096 sqlite
900000 4242 close 4
1000000 4242 unlink /tmp/fs-sample/app.db-journal
1100000 4243 open 5 /tmp/fs-sample/photo.jpg.part wronly|creat|trunc
1200000 4243 write 5 8192 media
1300000 4243 ftruncate 5 8000
1400000 4243 close 5
1500000 4243 rename /tmp/fs-sample/photo.jpg.part /tmp/fs-sample/photo.jpg
1600000 4243 stat /tmp/fs-sample/photo.jpg size=8000
1700000 4242 open 6 /tmp/fs-sample rdonly|directory
1800000 4242 mkdir /tmp/fs-sample/sub%20dir
1900000 4242 fstat 3 size=4096
2000000 4242 read 3 16
2100000 4242 pread 3 100 7
2200000 4242 open 7 /tmp/fs-sample/app.db rdwr
2300000 4242 write 7 3 hex:616263
2400000 4242 close 7
2600000 4242 close 3
2700000 4242 sync
