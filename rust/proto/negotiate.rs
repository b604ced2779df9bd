// SPDX-License-Identifier: GPL-2.0

//! Protocol version negotiation (version 2 with fallback to 1).
