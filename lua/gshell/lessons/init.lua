-- gshell.lessons: the names of the lessons built into gshell (each is
-- lua/gshell/lessons/NAME.lua). Lessons a teacher writes need not be
-- listed here: `gshell --lesson path/to/file.lua` runs one, and files in
-- $GSHELL_LESSON_PATH (default ~/.local/share/gshell/lessons) are found
-- by name.
return { "gpu", "lenet", "kernels" }
