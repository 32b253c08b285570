//! The bank of one-line tasks a small model is shown the nearest of (`super::nearest_example`):
//! what people ask of a shell agent, each with the block that does it, written so that a task's
//! own values can be put in (`super::fill`): every file name, extension, number, list and ordinal
//! of an entry's task appears in its block as the task writes it (an ordinal as its number), and
//! the words a task may change (`apple`, `red`, `docs`) are the block's arguments. A number the
//! block needs for itself is never one the task names (`range(2, 4 + 1)` for `2 to 4`, not
//! `range(1, 4 + 1)` for `1 to 4`, whose `1` would be replaced twice).
//!
//! Plain data: it must not hold a command that reaches outside the work dir or the network, nor
//! one that deletes more than the file its task names.

/// The entries: (task, block).
pub(super) const BANK: &[(&str, &str)] = &[
    (
        "show the content of notes.txt",
        "```bash\ncat notes.txt\n```",
    ),
    (
        "print the first line of notes.txt",
        "```bash\nhead -n 1 notes.txt\n```",
    ),
    (
        "print the last line of notes.txt",
        "```bash\ntail -n 1 notes.txt\n```",
    ),
    (
        "count the lines in notes.txt",
        "```bash\nwc -l < notes.txt\n```",
    ),
    (
        "count the words in notes.txt",
        "```bash\nwc -w < notes.txt\n```",
    ),
    (
        "sort the lines of notes.txt and print them",
        "```bash\nsort notes.txt\n```",
    ),
    (
        "print the lines of notes.txt without duplicates",
        "```bash\nsort -u notes.txt\n```",
    ),
    (
        "find the lines with TODO in notes.txt",
        "```bash\ngrep TODO notes.txt\n```",
    ),
    (
        "replace red with blue in notes.txt and save it",
        "```bash\nsed -i 's/red/blue/g' notes.txt\n```",
    ),
    (
        "print notes.txt in upper case",
        "```bash\ntr 'a-z' 'A-Z' < notes.txt\n```",
    ),
    (
        "create notes.txt containing Good morning",
        "```bash\necho 'Good morning' > notes.txt\n```",
    ),
    (
        "write the numbers 4 to 6 into notes.txt, one per line",
        "```bash\nseq 4 6 > notes.txt\n```",
    ),
    (
        "add the line buy milk at the end of notes.txt",
        "```bash\necho 'buy milk' >> notes.txt\n```",
    ),
    (
        "create an empty file notes.txt",
        "```bash\ntouch notes.txt\n```",
    ),
    (
        "make a directory called docs",
        "```bash\nmkdir -p docs\n```",
    ),
    ("remove the file notes.txt", "```bash\nrm notes.txt\n```"),
    (
        "copy notes.txt to backup.txt",
        "```bash\ncp notes.txt backup.txt\n```",
    ),
    (
        "rename notes.txt to todo.md",
        "```bash\nmv notes.txt todo.md\n```",
    ),
    ("list the files here", "```bash\nls\n```"),
    ("count the files here", "```bash\nls | wc -l\n```"),
    ("print today's date", "```bash\ndate\n```"),
    (
        "print the result of 6 times 9 with python",
        "```python\nprint(6 * 9)\n```",
    ),
    (
        "compute 5 factorial in python",
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
        "write a C program that prints Hi",
        "```c\n#include <stdio.h>\n\nint main(void) {\n    printf(\"Hi\\n\");\n    return 0;\n}\n```",
    ),
    (
        "save a python script hello.py that prints hello",
        "```python:hello.py\nprint('hello')\n```",
    ),
    (
        "create settings.json with the key color set to red",
        "```bash\necho '{\"color\": \"red\"}' > settings.json\n```",
    ),
    // Lines picked by number or position.
    (
        "print the first 3 lines of notes.txt",
        "```bash\nhead -n 3 notes.txt\n```",
    ),
    (
        "print the last 3 lines of notes.txt",
        "```bash\ntail -n 3 notes.txt\n```",
    ),
    (
        "print the second line of notes.txt",
        "```bash\nawk 'NR == 2' notes.txt\n```",
    ),
    (
        "print notes.txt with line numbers",
        "```bash\ncat -n notes.txt\n```",
    ),
    (
        "print the lines of notes.txt in reverse order",
        "```bash\ntac notes.txt\n```",
    ),
    // Lines picked by what they hold.
    (
        "count the lines of notes.txt that contain apple",
        "```bash\ngrep -c apple notes.txt\n```",
    ),
    (
        "print the lines of notes.txt that do not contain apple",
        "```bash\ngrep -v apple notes.txt\n```",
    ),
    (
        "print the lines of notes.txt that start with A",
        "```bash\ngrep '^A' notes.txt\n```",
    ),
    // Text changed on the way out.
    (
        "print notes.txt in lower case",
        "```bash\ntr 'A-Z' 'a-z' < notes.txt\n```",
    ),
    (
        "print notes.txt with red replaced by blue",
        "```bash\nsed 's/red/blue/g' notes.txt\n```",
    ),
    (
        "sort the numbers in notes.txt from smallest to largest",
        "```bash\nsort -n notes.txt\n```",
    ),
    // Facts about files and the system.
    (
        "print the size of notes.txt in bytes",
        "```bash\nwc -c < notes.txt\n```",
    ),
    ("print the current directory", "```bash\npwd\n```"),
    ("print the user name", "```bash\nwhoami\n```"),
    (
        "print the text hello with echo",
        "```bash\necho 'hello'\n```",
    ),
    ("list the .py files here", "```bash\nls *.py\n```"),
    // Files and folders.
    (
        "create two empty files a.txt and b.txt",
        "```bash\ntouch a.txt b.txt\n```",
    ),
    ("delete all .log files here", "```bash\nrm -f *.log\n```"),
    (
        "move notes.txt into the folder docs",
        "```bash\nmv notes.txt docs/\n```",
    ),
    (
        "copy notes.txt into the folder docs",
        "```bash\ncp notes.txt docs/\n```",
    ),
    (
        "remove the empty directory docs",
        "```bash\nrmdir docs\n```",
    ),
    // Python one-liners with numbers, lists and words.
    (
        "print the numbers 2 to 4 with python",
        "```python\nfor n in range(2, 4 + 1):\n    print(n)\n```",
    ),
    (
        "print the numbers 9 down to 7 with python",
        "```python\nfor n in range(9, 7 - 1, -1):\n    print(n)\n```",
    ),
    (
        "print the even numbers from 4 to 10 with python",
        "```python\nfor n in range(4, 10 + 1, 2):\n    print(n)\n```",
    ),
    (
        "print the odd numbers from 3 to 9 with python",
        "```python\nfor n in range(3, 9 + 1, 2):\n    print(n)\n```",
    ),
    (
        "print the sum of the numbers from 2 to 10 with python",
        "```python\nprint(sum(range(2, 10 + 1)))\n```",
    ),
    (
        "print the square of 4 with python",
        "```python\nprint(4 ** 2)\n```",
    ),
    (
        "print the cube of 2 with python",
        "```python\nprint(2 ** 3)\n```",
    ),
    (
        "print 2 to the power of 5 with python",
        "```python\nprint(2 ** 5)\n```",
    ),
    (
        "print the square root of 16 with python",
        "```python\nimport math\nprint(math.sqrt(16))\n```",
    ),
    (
        "print 10 divided by 4 with python",
        "```python\nprint(10 / 4)\n```",
    ),
    (
        "print the sum of [1, 2, 3] with python",
        "```python\nprint(sum([1, 2, 3]))\n```",
    ),
    (
        "print the largest number in [3, 1, 2] with python",
        "```python\nprint(max([3, 1, 2]))\n```",
    ),
    (
        "print the smallest number in [3, 1, 2] with python",
        "```python\nprint(min([3, 1, 2]))\n```",
    ),
    (
        "print the length of the word apple with python",
        "```python\nprint(len('apple'))\n```",
    ),
    (
        "print the word apple in upper case with python",
        "```python\nprint('apple'.upper())\n```",
    ),
    // C programs.
    (
        "write a C program that prints the sum of 2 and 3",
        "```c\n#include <stdio.h>\n\nint main(void) {\n    printf(\"%d\\n\", 2 + 3);\n    return 0;\n}\n```",
    ),
    (
        "write a C program that prints 3 times 5",
        "```c\n#include <stdio.h>\n\nint main(void) {\n    printf(\"%d\\n\", 3 * 5);\n    return 0;\n}\n```",
    ),
    (
        "write a C program that prints the numbers 1 to 4",
        "```c\n#include <stdio.h>\n\nint main(void) {\n    for (int n = 1; n <= 4; n++) {\n        printf(\"%d\\n\", n);\n    }\n    return 0;\n}\n```",
    ),
];
