"""A group-coordinator simulator that writes the `__consumer_offsets` records Kafka would write.

    from coordinator.simulator import Simulation, load_scenario
    result = Simulation(load_scenario("canary-rollout"), "cooperative-sticky", seed=1).run()
    result.records        # CapturedRecord: partition, offset, timestamp, key, value (+ canonical dict)
    result.truth          # ground truth: rebalances (true start/end, downtime), lag samples
    result.summary        # one row of figures for comparing strategies

Live use (a streaming source): `Simulation(...).run_stream(speed=...)` yields records paced to the
wall clock and `end_offsets_at(t)` gives the produce side's log end offsets at any time.
"""
from coordinator.simulator.capture import CapturedRecord, from_capture
from coordinator.simulator.scenario import (CLASSIC_STRATEGIES, CONSUMER_STRATEGIES, STRATEGIES, Scenario,
                                            ScenarioError, builtin_scenarios, load_scenario, parse_scenario,
                                            protocol_of)
from coordinator.simulator.simulation import Simulation, SimulationResult
from coordinator.simulator.summary import Summary, format_table

__all__ = ["CLASSIC_STRATEGIES", "CONSUMER_STRATEGIES", "STRATEGIES", "CapturedRecord", "Scenario",
           "ScenarioError", "Simulation", "SimulationResult", "Summary", "builtin_scenarios",
           "format_table", "from_capture", "load_scenario", "parse_scenario", "protocol_of"]
