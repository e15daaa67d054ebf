// SPDX-License-Identifier: BSL-1.0
#pragma once
// The answer shape shared by the batch scripts (claim, settle, batch extend): one integer
// per item sent, in the order sent. Both kinds read it with the same check, so that a
// reply one kind takes as an answer the other does too.

#include <cstddef>

#include "resp/resp.hpp"

namespace redlock::detail {

/// Whether `r` answers a batch call of `items` items: an array of exactly `items`
/// integers. Anything else (an error, a short or nested array, a string among the
/// integers) is no answer for any item: the node may or may not have run the call.
inline bool batch_answer_well_formed(const resp::reply& r, std::size_t items) {
  if (r.empty() || r[0].kind != resp::type::array || r[0].size != items || r.size() != items + 1)
    return false;
  for (std::size_t k = 1; k <= items; ++k)
    if (r[k].kind != resp::type::integer) return false;
  return true;
}

}  // namespace redlock::detail
