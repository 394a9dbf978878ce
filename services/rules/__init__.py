"""Rule packs (YAML data), named validators, masking and the linear-time rule engine."""

from services.rules.engine import Match, RuleEngine
from services.rules.masking import mask
from services.rules.pack import PackError, Rule, RulePack, load_pack, load_packs
from services.rules.prompts import PromptRegistry, load_prompt_registry
from services.rules.validators import VALIDATORS

__all__ = [
    "VALIDATORS",
    "Match",
    "PackError",
    "PromptRegistry",
    "Rule",
    "RuleEngine",
    "RulePack",
    "load_pack",
    "load_packs",
    "load_prompt_registry",
    "mask",
]
