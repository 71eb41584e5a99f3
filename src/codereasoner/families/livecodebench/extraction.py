"""LiveCodeBench's upstream post-processing (docs/benchmark-rules.md): code execution's answer, and
test output prediction's answer with the right-hand side its grader evaluates."""

from __future__ import annotations

import ast

from codereasoner.tasks.extraction import between

__all__ = ["lcb_assert_rhs", "lcb_execution", "lcb_test_output"]


def lcb_execution(completion: str, *, cot: bool = False, openai: bool = False) -> str:
    """LiveCodeBench code-execution post-processing (``extract_execution_code``); upstream reads
    every model's answer this way, so ``openai`` changes nothing."""
    text = completion
    if cot and "[ANSWER]" in text:
        text = between(text, "[ANSWER]").strip()
    if "==" in text:
        text = between(text, "==").strip()
    if "[/ANSWER]" in text:
        text = text.split("[/ANSWER]", 1)[0].strip()
    else:
        text = text.split("\n", 1)[0].strip()
    return text.strip()


def lcb_test_output(completion: str, *, codellama: bool = False) -> str:
    """LiveCodeBench test-output post-processing (``extract_test_output_code``); may be multi-line."""
    lines = completion.split("\n")
    asserts = [line for line in lines if line.startswith("assert")]
    if asserts:
        return asserts[-1]
    if codellama:
        fences = [i for i, line in enumerate(lines) if "PYTHON]" in line]
    else:
        opening = [i for i, line in enumerate(lines) if "```python" in line or "```Python" in line]
        if opening:
            start = opening[0]
            fences = [start] + [i for i in range(start + 1, len(lines)) if "```" in lines[i]]
        else:
            fences = [i for i, line in enumerate(lines) if "```" in line]
    if len(fences) < 2:
        return ""
    return "\n".join(lines[fences[0] + 1 : fences[1]])


def lcb_assert_rhs(prediction: str) -> str:
    """The right-hand side LiveCodeBench's test-output grader evaluates (§3.6 steps 1-3)."""
    text = prediction
    lines = text.splitlines()  # upstream's: \r, \x0b, \x0c, \x1c-\x1e, \x85, \u2028 and \u2029 too
    if len(lines) > 1:
        for line in lines:
            if not line.startswith("#") and "assert" in line:
                text = line
                break
    text = text.strip()
    if "assert" not in text:
        return text
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "Invalid syntax"
    if not tree.body:
        return "Empty statement"
    statement = tree.body[0]
    if not isinstance(statement, ast.Assert):
        return "Not an assert statement"
    test = statement.test
    if not isinstance(test, ast.Compare) or not isinstance(test.ops[0], ast.Eq):
        return "Not an equality assertion"
    return ast.get_source_segment(text, test.comparators[0]) or ""
