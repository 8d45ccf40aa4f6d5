// What the libraries precompile, and the test frameworks, precompiled once for every test
// (tests/meson.build).
#include <absl/synchronization/notification.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pch/devmgr_pch.h"
