"""``services.yamlload.safe_load``: the same data as PyYAML's safe loader, and as safe."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from services.yamlload import safe_load

RULES = Path(__file__).parents[2] / "rules"


@pytest.mark.parametrize("path", sorted(RULES.rglob("*.yaml")), ids=lambda p: p.name)
def test_every_rules_file_reads_as_the_pure_python_safe_loader_reads_it(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert safe_load(text) == yaml.load(text, Loader=yaml.SafeLoader)


def test_python_tags_are_refused() -> None:
    with pytest.raises(yaml.YAMLError):
        safe_load("!!python/object/apply:os.system ['true']")


def test_a_syntax_error_is_a_yaml_error_with_its_line() -> None:
    with pytest.raises(yaml.YAMLError, match="line 2"):
        safe_load("a: 1\nb: [unclosed\n")
