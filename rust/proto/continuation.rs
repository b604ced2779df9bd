// SPDX-License-Identifier: GPL-2.0

//! Version 2 message continuation reassembly.
