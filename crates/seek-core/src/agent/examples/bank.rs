//! The bank of one-line tasks a small model is shown the nearest of (`super::nearest_example`):
//! what people ask of a shell agent, each with the block that does it, written so that a task's
//! own values can be put in (`super::fill`): every file name, extension, number, list and ordinal
//! of an entry's task appears in its block as the task writes it (an ordinal as its number), and
//! the words a task may change (`apple`, `red`, `docs`) are the block's arguments. A number the
//! block needs for itself is never one the task names (`range(2, 4 + 1)` for `2 to 4`, not
//! `range(1, 4 + 1)` for `1 to 4`, whose `1` would be replaced twice).
//!
//! Generic patterns, not the benchmark's tasks (benches/smallmodel/): no entry is a task of its
//! sets with only the values changed (`print the lines of list.txt that do not contain skip` is
//! not here as `… that do not contain apple`); 2026-12-06 the entries that were are reworded or
//! gone (docs/agent.md#small-models).
//!
//! Plain data: it must not hold a command that reaches outside the work dir or the network, nor
//! one that deletes more than the file its task names; what each block does must be what its
//! task asks (`super::intent`, tested).

/// The entries: (task, block).
pub(super) const BANK: &[(&str, &str)] = &[
    // Reading, counting and picking lines.
    ("print the text of notes.txt", "```bash\ncat notes.txt\n```"),
    (
        "show only the first line in notes.txt",
        "```bash\nhead -n 1 notes.txt\n```",
    ),
    (
        "show only the last line in notes.txt",
        "```bash\ntail -n 1 notes.txt\n```",
    ),
    (
        "from notes.txt, print the first 3 lines",
        "```bash\nhead -n 3 notes.txt\n```",
    ),
    (
        "from notes.txt, print the last 3 lines",
        "```bash\ntail -n 3 notes.txt\n```",
    ),
    (
        "print just the second line in notes.txt",
        "```bash\nawk 'NR == 2' notes.txt\n```",
    ),
    (
        "number the lines of notes.txt as it is printed",
        "```bash\ncat -n notes.txt\n```",
    ),
    (
        "reverse the order of the lines of notes.txt and print them",
        "```bash\ntac notes.txt\n```",
    ),
    (
        "how many lines are in notes.txt",
        "```bash\nwc -l < notes.txt\n```",
    ),
    (
        "how many words are in notes.txt",
        "```bash\nwc -w < notes.txt\n```",
    ),
    (
        "count the bytes in notes.txt",
        "```bash\nwc -c < notes.txt\n```",
    ),
    (
        "sort notes.txt and show the result",
        "```bash\nsort notes.txt\n```",
    ),
    (
        "sort notes.txt as numbers",
        "```bash\nsort -n notes.txt\n```",
    ),
    (
        "print the lines of notes.txt without duplicates",
        "```bash\nsort -u notes.txt\n```",
    ),
    (
        "print the lines of notes.txt that contain TODO",
        "```bash\ngrep TODO notes.txt\n```",
    ),
    (
        "count the notes.txt lines that contain TODO",
        "```bash\ngrep -c TODO notes.txt\n```",
    ),
    (
        "print the lines of notes.txt except those that contain TODO",
        "```bash\ngrep -v TODO notes.txt\n```",
    ),
    (
        "print the lines of notes.txt beginning with Dear",
        "```bash\ngrep '^Dear' notes.txt\n```",
    ),
    (
        "print notes.txt in upper case",
        "```bash\ntr 'a-z' 'A-Z' < notes.txt\n```",
    ),
    (
        "show all of notes.txt in lower case",
        "```bash\ntr 'A-Z' 'a-z' < notes.txt\n```",
    ),
    (
        "show notes.txt where red becomes blue, without changing the file",
        "```bash\nsed 's/red/blue/g' notes.txt\n```",
    ),
    // Facts about the system.
    ("what files are here", "```bash\nls\n```"),
    ("how many files are here", "```bash\nls | wc -l\n```"),
    ("which .py files are here", "```bash\nls *.py\n```"),
    ("print today's date", "```bash\ndate\n```"),
    ("print the current directory", "```bash\npwd\n```"),
    ("which user am I", "```bash\nwhoami\n```"),
    ("use echo to say hello", "```bash\necho 'hello'\n```"),
    // Writing and changing files.
    (
        "create notes.txt with Good morning in it",
        "```bash\necho 'Good morning' > notes.txt\n```",
    ),
    (
        "save the sequence 4 to 6 in notes.txt",
        "```bash\nseq 4 6 > notes.txt\n```",
    ),
    (
        "store color: red as JSON in settings.json",
        "```bash\necho '{\"color\": \"red\"}' > settings.json\n```",
    ),
    (
        "append buy milk to notes.txt as a new line",
        "```bash\necho 'buy milk' >> notes.txt\n```",
    ),
    (
        "in notes.txt, replace every red with blue in place",
        "```bash\nsed -i 's/red/blue/g' notes.txt\n```",
    ),
    (
        "make notes.txt as an empty file",
        "```bash\ntouch notes.txt\n```",
    ),
    (
        "make empty files a.txt and b.txt",
        "```bash\ntouch a.txt b.txt\n```",
    ),
    ("make a folder docs", "```bash\nmkdir -p docs\n```"),
    (
        "copy notes.txt over to backup.txt",
        "```bash\ncp notes.txt backup.txt\n```",
    ),
    (
        "put a copy of notes.txt in docs",
        "```bash\ncp notes.txt docs/\n```",
    ),
    // Moving and deleting.
    ("delete notes.txt", "```bash\nrm notes.txt\n```"),
    ("remove every .tmp file here", "```bash\nrm -f *.tmp\n```"),
    (
        "rename notes.txt as todo.md",
        "```bash\nmv notes.txt todo.md\n```",
    ),
    (
        "move notes.txt inside docs",
        "```bash\nmv notes.txt docs/\n```",
    ),
    ("delete docs, an empty folder", "```bash\nrmdir docs\n```"),
    // Python one-liners with numbers, lists and words.
    (
        "print the result of 6 times 9 with python",
        "```python\nprint(6 * 9)\n```",
    ),
    (
        "with python, print the factorial of 5",
        "```python\nimport math\nprint(math.factorial(5))\n```",
    ),
    (
        "print the word apple backwards with python",
        "```python\nprint('apple'[::-1])\n```",
    ),
    (
        "with python, count the letter s in the word mississippi",
        "```python\nprint('mississippi'.count('s'))\n```",
    ),
    (
        "with python, print every number from 2 to 4",
        "```python\nfor n in range(2, 4 + 1):\n    print(n)\n```",
    ),
    (
        "with python, count down from 9 to 7",
        "```python\nfor n in range(9, 7 - 1, -1):\n    print(n)\n```",
    ),
    (
        "with python, print each even number between 4 and 10",
        "```python\nfor n in range(4, 10 + 1, 2):\n    print(n)\n```",
    ),
    (
        "with python, print each odd number between 3 and 9",
        "```python\nfor n in range(3, 9 + 1, 2):\n    print(n)\n```",
    ),
    (
        "with python, sum up the numbers from 2 to 10",
        "```python\nprint(sum(range(2, 10 + 1)))\n```",
    ),
    (
        "with python, print 4 squared",
        "```python\nprint(4 ** 2)\n```",
    ),
    (
        "with python, print 2 cubed",
        "```python\nprint(2 ** 3)\n```",
    ),
    (
        "with python, raise 2 to the power 5",
        "```python\nprint(2 ** 5)\n```",
    ),
    (
        "with python, take the square root of 16",
        "```python\nimport math\nprint(math.sqrt(16))\n```",
    ),
    (
        "with python, divide 10 by 4",
        "```python\nprint(10 / 4)\n```",
    ),
    (
        "with python, sum up [1, 2, 3]",
        "```python\nprint(sum([1, 2, 3]))\n```",
    ),
    (
        "with python, find the maximum of [3, 1, 2]",
        "```python\nprint(max([3, 1, 2]))\n```",
    ),
    (
        "with python, find the minimum of [3, 1, 2]",
        "```python\nprint(min([3, 1, 2]))\n```",
    ),
    (
        "with python, how long is the word apple",
        "```python\nprint(len('apple'))\n```",
    ),
    (
        "with python, print apple in upper case",
        "```python\nprint('apple'.upper())\n```",
    ),
    (
        "save the python script hello.py, which prints hello",
        "```python:hello.py\nprint('hello')\n```",
    ),
    // C programs.
    (
        "print Hi from a C program",
        "```c\n#include <stdio.h>\n\nint main(void) {\n    printf(\"Hi\\n\");\n    return 0;\n}\n```",
    ),
    (
        "in a C program, print 2 plus 3",
        "```c\n#include <stdio.h>\n\nint main(void) {\n    printf(\"%d\\n\", 2 + 3);\n    return 0;\n}\n```",
    ),
    (
        "in a C program, print 3 multiplied by 5",
        "```c\n#include <stdio.h>\n\nint main(void) {\n    printf(\"%d\\n\", 3 * 5);\n    return 0;\n}\n```",
    ),
    (
        "in a C program, print each number from 1 to 4",
        "```c\n#include <stdio.h>\n\nint main(void) {\n    for (int n = 1; n <= 4; n++) {\n        printf(\"%d\\n\", n);\n    }\n    return 0;\n}\n```",
    ),
];
