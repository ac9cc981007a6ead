"""Skills in the Agent Skills format: parsing, the registry, matching, Level 3 files."""

from application.skills.files import SkillFileError, folder_files, read_file
from application.skills.matcher import DEFAULT_THRESHOLD, SkillMatch, SkillMatcher
from application.skills.parsing import parse_skill
from application.skills.registry import SkillRegistry, builtin_skills_dir, canonical_name
from application.skills.skill import Skill, SkillError

__all__ = [
    "DEFAULT_THRESHOLD",
    "Skill",
    "SkillError",
    "SkillFileError",
    "SkillMatch",
    "SkillMatcher",
    "SkillRegistry",
    "builtin_skills_dir",
    "canonical_name",
    "folder_files",
    "parse_skill",
    "read_file",
]
