#flashstack-filetrace 1
# A messaging app sends one message: SQLite in rollback-journal mode (DELETE), a temp
# file renamed into place, an image cache entry, and a log. Times in ns.
0 100 mkdir /data/data/com.example.chat/databases
1000 100 open 3 /data/data/com.example.chat/databases/msg.db rdwr|creat
2000 100 pwrite 3 0 4096 sqlite
3000 100 pwrite 3 4096 4096 sqlite
4000 100 fsync 3
10000 100 open 4 /data/data/com.example.chat/databases/msg.db-journal rdwr|creat
11000 100 write 4 512 sqlite
12000 100 write 4 4096 sqlite
13000 100 fdatasync 4
14000 100 pwrite 3 4096 4096 sqlite:0.125
15000 100 fsync 3
16000 100 close 4
17000 100 unlink /data/data/com.example.chat/databases/msg.db-journal
20000 101 open 5 /data/data/com.example.chat/files/state.xml.tmp wronly|creat|trunc
21000 101 write 5 16 hex:3c3f786d6c2076657273696f6e3d2231
22000 101 fsync 5
23000 101 close 5
24000 101 rename /data/data/com.example.chat/files/state.xml.tmp /data/data/com.example.chat/files/state.xml
25000 101 open 5 /data/data/com.example.chat/files/state.xml rdwr
26000 101 pread 5 0 16
27000 101 pwrite 5 8 4 hex:3d22322e
28000 101 close 5
30000 102 open 6 /sdcard/Pictures/cache%20entry.jpg wronly|creat|excl
31000 102 write 6 65536 media
32000 102 ftruncate 6 60000
33000 102 close 6
34000 100 stat /data/data/com.example.chat/databases/msg.db
35000 100 fstat 3
36000 100 seek 3 0
37000 100 read 3 100
38000 100 link /data/data/com.example.chat/files/state.xml /data/data/com.example.chat/files/state.bak
39000 100 truncate /data/data/com.example.chat/files/state.bak 0
40000 100 unlink /data/data/com.example.chat/files/state.bak
41000 100 open 7 /data/data/com.example.chat/files/log.txt wronly|creat|append
42000 100 write 7 40 text
43000 100 write 7 40 unknown
44000 100 close 7
45000 100 rmdir /data/data/com.example.chat/empty
46000 100 close 3
47000 100 sync
