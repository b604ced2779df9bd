// SPDX-License-Identifier: GPL-2.0

//! Marshaling decisions: how a call and its reply travel.
