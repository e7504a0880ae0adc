#flashstack-filetrace 1
0 1 open 36 /data/data/mobigen-fd36 rdwr
0 1 write 36 4 unknown
200000 2 open 40 /system/fonts/Roboto-Regular.ttf rdonly
250000 2 read 40 1024
300000 2 pread 40 4096 512
350000 2 close 40
450000 2 open 41 /data/data/mobigen-fd41 rdwr|creat
500000 2 pwrite 41 0 4096 unknown
600000 2 pwrite 41 8192 4096 unknown
650000 3 open 77 /mobigen/fd77 rdwr
650000 3 pwrite 77 4096 4096 unknown
660000 3 fsync 77
670000 3 stat /data/data/com.example/x
700000 2 fsync 41
800000 2 pwrite 41 0 4096 unknown
900000 2 fdatasync 41
950000 2 fstat 41
1000000 2 stat /data/data/com.example/shared_prefs/prefs.xml
1100000 2 unlink /data/data/com.example/cache/image/a.image
1200000 2 close 41
1500000 1 write 36 4 unknown
