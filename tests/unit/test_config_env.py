"""Only GROUPSCOPE_<SECTION>__<KEY> variables are config: others of the prefix belong to other
tools (streaming/config.py)."""
from __future__ import annotations

import pytest

from streaming.config import load_config
from streaming.errors import UserError


def test_groupscope_variables_without_a_double_underscore_are_left_alone():
    config = load_config(None, env={"GROUPSCOPE_DIR": "/opt/groupscope",
                                    "GROUPSCOPE_VERSION": "1.2", "GROUPSCOPE_ZYGOTE": "off",
                                    "GROUPSCOPE_LAG__POLL_INTERVAL": "7s"})
    assert config.lag.poll_interval == 7.0
    # one of the config's form that names no key is still a typo to stop at
    with pytest.raises(UserError, match="GROUPSCOPE_LAG__POLL_INTERVALL: unknown config key "
                                        "lag.poll_intervall"):
        load_config(None, env={"GROUPSCOPE_LAG__POLL_INTERVALL": "7s"})
