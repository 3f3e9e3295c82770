"""The offsets lane's typed columns (name, Spark DDL type), in a module that imports nothing:
the state stage's module loads without pyarrow in the processes Spark starts to plan a query
(tests/unit/test_planning_imports.py)."""

COMMIT_FIELDS = (
    ("c_topic", "string"), ("c_partition", "int"), ("c_offset", "bigint"), ("c_epoch", "int"),
    ("c_metadata", "string"), ("c_commit_ts", "bigint"), ("c_topic_id", "string"),
)
COMMIT_COLUMNS = [name for name, _ in COMMIT_FIELDS]
# The state stage's output kind of the offsets lane's rows.
COMMIT_KIND = "commit"
