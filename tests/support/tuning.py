"""Whether this test run builds the job's sessions with local-mode tuning (the CI runs the job's
end-to-end tests a second time with GROUPSCOPE_SPARK__LOCAL_TUNING=off)."""
from __future__ import annotations

import os

import pytest

LOCAL_TUNING = os.environ.get("GROUPSCOPE_SPARK__LOCAL_TUNING", "auto")

# For tests of a local-mode speed-up in the test session's own Spark.
local_tuning_on = pytest.mark.skipif(LOCAL_TUNING == "off", reason="spark.local_tuning is off")
