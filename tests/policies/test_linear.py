"""The linear policy file's loader (`policylab.policies.linear`) refuses broken and misfitting files with one
line naming the checkpoint."""

import pytest

from policylab.errors import BadInput
from policylab.policies import linear
from tests.support.bad_policy_files import write_bad_policy_files


@pytest.fixture(scope="module")
def bad_checkpoints(tmp_path_factory):
    return write_bad_policy_files(tmp_path_factory.mktemp("bad_checkpoints"))


def test_loader_refuses_the_same_files(bad_checkpoints):
    for case in ("text", "corrupt", "garbage", "narrow", "nan", "no_std"):
        path, words = bad_checkpoints[case]
        with pytest.raises(BadInput) as err:
            linear.load(path, 27, 8)
        assert err.value.field == "checkpoint" and words in err.value.message
