import pytest
from memory_helpers import JIEBA_CACHE

from memory.config import MemoryConfig


@pytest.fixture
def cfg(tmp_path) -> MemoryConfig:
    return MemoryConfig(project_home=tmp_path / "proj" / ".ctxmill", global_home=tmp_path / "global", cache_dir=JIEBA_CACHE)
