// SPDX-License-Identifier: MIT
// TensorBoard event files (profile/event_file.h): the records of a file read up to the first
// damaged one, each decoded as an Event, and a decoded event encoded again decodes the same.
// Input: the file's bytes.
#include "fuzz_util.h"
#include "profile/event_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in = nt::fuzz::as_string(data, size);
  for (const nt::profile::Record& r : nt::profile::read_records(in)) {
    NT_FUZZ_ASSERT(r.end <= in.size());
    nt::fuzz::expect_ok_or_error([&] {
      const nt::profile::ScalarEvent e = nt::profile::decode_event(r.data, "f");
      const nt::profile::ScalarEvent again = nt::profile::decode_event(nt::profile::encode_event(e), "f");
      NT_FUZZ_ASSERT(again.step == e.step && again.file_version == e.file_version);
      NT_FUZZ_ASSERT(again.values.size() == e.values.size());
    });
  }
  // The same bytes as one Event message, without framing.
  nt::fuzz::expect_ok_or_error([&] { (void)nt::profile::decode_event(in, "f"); });
  return 0;
}
