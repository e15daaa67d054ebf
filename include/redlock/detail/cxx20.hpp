// SPDX-License-Identifier: BSL-1.0
#pragma once
/// Included first by every public header: a compiler not in C++20 mode stops here, with
/// one error that says what is missing, instead of pages of errors about what C++17 lacks.

#if __cplusplus < 202002L
#error "redlock-asio needs C++20: compile with -std=c++20 or later"
// Missing on purpose: a missing header stops the compiler here (an #error alone does not).
#include <redlock-asio_needs_C++20>
#endif
