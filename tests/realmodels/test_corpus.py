"""Every real model of the corpus runs on its derived input specification (skipped, with the
reason, while the corpus cache is empty: ``make realmodels`` fills it)."""

from __future__ import annotations

import pytest

from edgestudio.core.inputs.input_probe import resolve_inputs
from tests.realmodels.corpus import CORPUS, SKIP_REASON, RealModel

# The real-model corpus: end to end, in `make test-e2e` (and CI), not the fast tier.
pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("model", CORPUS, ids=lambda m: m.name)
def test_real_model_runs_on_its_derived_inputs(model: RealModel) -> None:
    if not model.path.is_file():
        pytest.skip(reason=SKIP_REASON)
    resolved = resolve_inputs(model.path, use_cache=False)
    assert resolved.spec.verified
    feeds = resolved.feeds()
    outputs = resolved.session.run(None, feeds)
    assert outputs, model.name
