// SPDX-License-Identifier: GPL-2.0

//! Credit accounting for requesters and responders.
