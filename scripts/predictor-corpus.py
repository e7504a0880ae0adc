#!/usr/bin/env python3
"""Writes real SQLite databases (messages, contacts, feed cache) for fitting the ratio
predictor: the kind of files whose pages dominate a phone's write traffic. Deterministic."""
import os
import random
import sqlite3
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/corpus"
os.makedirs(out, exist_ok=True)
rng = random.Random(7)
words = ("the of and to in is you that it he was for on are as with his they at be this "
         "have from or one had by word but not what all were we when your can said there use "
         "an each which she do how their if will up other about out many then them these so "
         "hello thanks see you tomorrow lunch meeting photo video call later ok sure great").split()

def sentence(n):
    return " ".join(rng.choice(words) for _ in range(n))

path = os.path.join(out, "messages.db")
if os.path.exists(path):
    os.remove(path)
db = sqlite3.connect(path)
db.execute("PRAGMA page_size=4096")
db.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, thread INTEGER, sender TEXT, "
           "sent_ms INTEGER, body TEXT, read INTEGER)")
db.execute("CREATE INDEX by_thread ON messages(thread, sent_ms)")
db.execute("CREATE TABLE contacts (id INTEGER PRIMARY KEY, name TEXT, phone TEXT, email TEXT)")
db.execute("CREATE TABLE feed_cache (url TEXT PRIMARY KEY, fetched_ms INTEGER, json TEXT, "
           "thumb BLOB)")
t = 1_700_000_000_000
for i in range(60_000):
    t += rng.randint(1_000, 600_000)
    db.execute("INSERT INTO messages VALUES (?,?,?,?,?,?)",
               (i, rng.randint(1, 300), f"user{rng.randint(1, 500)}", t,
                sentence(rng.randint(2, 30)), rng.randint(0, 1)))
for i in range(5_000):
    name = f"{rng.choice(words).title()} {rng.choice(words).title()}"
    db.execute("INSERT INTO contacts VALUES (?,?,?,?)",
               (i, name, f"+1{rng.randint(2000000000, 9999999999)}",
                f"{name.split()[0].lower()}{i}@example.com"))
for i in range(3_000):
    thumb = bytes(rng.getrandbits(8) for _ in range(rng.randint(200, 3000)))
    db.execute("INSERT INTO feed_cache VALUES (?,?,?,?)",
               (f"https://example.com/feed/{i}", t,
                '{"title": "%s", "likes": %d, "tags": ["%s"]}'
                % (sentence(6), rng.randint(0, 9999), rng.choice(words)), thumb))
db.commit()
db.close()
print(path)
