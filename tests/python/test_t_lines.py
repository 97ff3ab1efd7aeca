"""bench/t_lines.py: lines of T code per program (issue 10's 'report its lines of T code')."""
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))

import t_lines  # noqa: E402


def test_counts_only_t_functions_without_comments_blank_lines_or_docstrings(tmp_path):
    p = tmp_path / "prog.py"
    p.write_text('''import tilec.language as T


def build(n):
    block = n // 4  # host code: not counted

    @T.prim_func
    def k(A: T.Tensor((n,), "float32")):
        """A docstring over
        two lines."""
        with T.Kernel(1, threads=32) as bx:
            # a comment

            A[0] = 1
    return k


def host_only():
    return 3
''')
    assert t_lines.programs(str(p)) == [("build", 3, ["k"])]


def test_attention_programs_are_counted():
    found = {name: n for path in t_lines.ATTENTION for name, n, _ in t_lines.programs(os.path.join(ROOT, path))}
    assert set(found) >= {"flash_attention", "flash_attention_bwd", "flash_attention_varlen", "flash_decoding",
                          "mla_decode"}, found
    assert all(10 < n < 200 for n in found.values()), found
