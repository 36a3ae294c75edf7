#!/usr/bin/python3
"""Prints spec/support/text_goldens.lua: what the book's text helpers
(Dive into Deep Learning 9.2, PyTorch edition: read_time_machine,
tokenize, Vocab, load_corpus_time_machine, restated below from the book's
text) give on the default text, /usr/share/common-licenses/GPL-3, which
spec/d2l_text_spec.lua checks gshell's d2l against. Indices are written
1-based (the book's plus one), as gshell's are. Regenerate with

    /usr/bin/python3 spec/support/gen_text_goldens.py > spec/support/text_goldens.lua
"""
import collections
import re

PATH = "/usr/share/common-licenses/GPL-3"


def read_time_machine():
    with open(PATH, "r") as f:
        lines = f.readlines()
    return [re.sub("[^A-Za-z]+", " ", line).strip().lower() for line in lines]


def tokenize(lines, token="word"):
    if token == "word":
        return [line.split() for line in lines]
    return [list(line) for line in lines]


def count_corpus(tokens):
    if len(tokens) == 0 or isinstance(tokens[0], list):
        tokens = [token for line in tokens for token in line]
    return collections.Counter(tokens)


class Vocab:
    def __init__(self, tokens=None, min_freq=0, reserved_tokens=None):
        tokens = tokens or []
        reserved_tokens = reserved_tokens or []
        counter = count_corpus(tokens)
        self.token_freqs = sorted(counter.items(), key=lambda x: x[1], reverse=True)
        self.idx_to_token = ["<unk>"] + reserved_tokens
        self.token_to_idx = {t: i for i, t in enumerate(self.idx_to_token)}
        for token, freq in self.token_freqs:
            if freq < min_freq:
                break
            if token not in self.token_to_idx:
                self.idx_to_token.append(token)
                self.token_to_idx[token] = len(self.idx_to_token) - 1

    def __getitem__(self, t):
        return self.token_to_idx.get(t, 0)


def s(v):
    return '"%s"' % v.replace("\\", "\\\\").replace('"', '\\"')


def strs(v):
    return "{" + ", ".join(s(e) for e in v) + "}"


def ints(v):
    return "{" + ", ".join(str(e) for e in v) + "}"


def freqs(v):
    return "{" + ", ".join("{%s, %d}" % (s(t), f) for t, f in v) + "}"


lines = read_time_machine()
words = tokenize(lines)
wv = Vocab(words)
wv5 = Vocab(words, min_freq=5, reserved_tokens=["<pad>", "<bos>"])
chars = tokenize(lines, "char")
cv = Vocab(chars)
corpus = [cv[t] + 1 for line in chars for t in line]
out = ["-- Written by spec/support/gen_text_goldens.py; do not edit.", "return {"]
out.append("  num_lines = %d," % len(lines))
out.append("  first_lines = %s," % strs(lines[:12]))
out.append("  first_tokens = %s," % strs(words[0]))
out.append("  word_len = %d, word_first = %s, word_freqs = %s," % (len(wv.idx_to_token), strs(wv.idx_to_token[:20]),
                                                                  freqs(wv.token_freqs[:20])))
out.append("  word_last = %s," % strs(wv.idx_to_token[-20:]))
out.append("  word5_len = %d, word5_first = %s," % (len(wv5.idx_to_token), strs(wv5.idx_to_token[:10])))
out.append("  line_ids = %s," % ints([wv[t] + 1 for t in words[0]] + [wv["nonexistentword"] + 1]))
out.append("  char_tokens = %s," % strs(cv.idx_to_token))
out.append("  corpus_len = %d, corpus_first = %s," % (len(corpus), ints(corpus[:40])))
out.append("}")
print("\n".join(out))
