"""`tilelang.transform.pass_config`: the public home of `PassConfigKey` (defined in `tilelang.pass_config`)."""

from ..pass_config import KEYS, PassConfigKey, PassConfigWarning, check, normalize

normalize_pass_configs = check

__all__ = ["KEYS", "PassConfigKey", "PassConfigWarning", "check", "normalize", "normalize_pass_configs"]
