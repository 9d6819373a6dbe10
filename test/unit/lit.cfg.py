# -*- Python -*-
# lit configuration of the gtest unit tests: every executable named *Tests
# under the build's test/unit directory.

import os

import lit.formats

config.name = "cgc-unit"
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.test_source_root = os.path.join(config.cgc_obj_root, "test", "unit")
config.test_exec_root = config.test_source_root
