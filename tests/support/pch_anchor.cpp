// The source of kgpu_test_pch, the target that owns the precompiled header every test executable
// reuses (tests/CMakeLists.txt). It links gtest_main like the tests and is never run by ctest.
