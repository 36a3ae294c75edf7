-- Written by spec/support/gen_text_goldens.py; do not edit.
return {
  num_lines = 674,
  first_lines = {"gnu general public license", "version june", "", "copyright c free software foundation inc https fsf org", "everyone is permitted to copy and distribute verbatim copies", "of this license document but changing it is not allowed", "", "preamble", "", "the gnu general public license is a free copyleft license for", "software and other kinds of works", ""},
  first_tokens = {"gnu", "general", "public", "license"},
  word_len = 1000, word_first = {"<unk>", "the", "of", "to", "a", "or", "you", "license", "and", "work", "that", "this", "for", "in", "is", "it", "program", "not", "any", "if"}, word_freqs = {{"the", 345}, {"of", 221}, {"to", 192}, {"a", 184}, {"or", 151}, {"you", 128}, {"license", 102}, {"and", 98}, {"work", 97}, {"that", 91}, {"this", 86}, {"for", 86}, {"in", 81}, {"is", 70}, {"it", 52}, {"program", 52}, {"not", 51}, {"any", 50}, {"if", 49}, {"with", 45}},
  word_last = {"might", "gui", "about", "box", "employer", "programmer", "school", "sign", "incorporating", "subroutine", "consider", "linking", "applications", "lesser", "instead", "please", "read", "why", "lgpl", "html"},
  word5_len = 198, word5_first = {"<unk>", "<pad>", "<bos>", "the", "of", "to", "a", "or", "you", "license"},
  line_ids = {47, 44, 40, 8, 1},
  char_tokens = {"<unk>", " ", "e", "o", "t", "r", "i", "a", "n", "s", "c", "h", "l", "d", "u", "p", "f", "m", "y", "g", "w", "v", "b", "k", "x", "q", "j", "z"},
  corpus_len = 32794, corpus_first = {20, 9, 15, 2, 20, 3, 9, 3, 6, 8, 13, 2, 16, 15, 23, 13, 7, 11, 2, 13, 7, 11, 3, 9, 10, 3, 22, 3, 6, 10, 7, 4, 9, 2, 27, 15, 9, 3, 11, 4},
}
