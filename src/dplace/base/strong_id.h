// Distinct id types for dense indices (an op, a tensor, a device), and vectors indexed by one of
// them: `IdVector<OpId, double>` takes an OpId and nothing else, so a DeviceId cannot index per-op
// data by mistake.
//
// An id is made from an integer only explicitly (`OpId(3)`, `static_cast<OpId>(i)`) and read as
// one only explicitly (`op.value()`, `op.index()`), so it indexes no plain vector; ids of two types
// never compare. An id compares with an integer (`op >= 0` for a sentinel, `d < num_devices`) and
// moves by a count (`op + 1`).
#pragma once

#include <compare>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <ostream>
#include <vector>

namespace dplace {

template <typename Tag, typename Rep = int32_t>
class Id {
 public:
  using rep = Rep;
  constexpr Id() = default;
  constexpr explicit Id(Rep value) : value_(value) {}

  constexpr Rep value() const { return value_; }
  constexpr size_t index() const { return static_cast<size_t>(value_); }

  constexpr Id& operator++() {
    ++value_;
    return *this;
  }
  constexpr Id operator++(int) { return Id(value_++); }
  constexpr Id& operator--() {
    --value_;
    return *this;
  }

  friend std::ostream& operator<<(std::ostream& os, Id id) { return os << id.value_; }

  // An id offset by a count is an id of the same type (the next op, a tensor of an op's outputs).
  friend constexpr Id operator+(Id a, Rep k) { return Id(a.value_ + k); }
  friend constexpr Id operator-(Id a, Rep k) { return Id(a.value_ - k); }

  friend constexpr bool operator==(Id a, Id b) { return a.value_ == b.value_; }
  friend constexpr auto operator<=>(Id a, Id b) { return a.value_ <=> b.value_; }
  // An id compares with an integer: `op >= 0` (a sentinel), `d < cluster.num_devices()`.
  // Only with Rep itself: a size_t would convert silently.
  template <std::same_as<Rep> R>
  friend constexpr bool operator==(Id a, R b) {
    return a.value_ == b;
  }
  template <std::same_as<Rep> R>
  friend constexpr auto operator<=>(Id a, R b) {
    return a.value_ <=> b;
  }
  // Ids of another type do not compare (without this they would, as integers).
  template <typename OtherTag, typename OtherRep>
  friend bool operator==(Id, Id<OtherTag, OtherRep>) = delete;
  template <typename OtherTag, typename OtherRep>
  friend auto operator<=>(Id, Id<OtherTag, OtherRep>) = delete;

 private:
  Rep value_ = 0;
};

// The ids [begin, end), for range-for.
template <typename IdT>
class IdRange {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = IdT;
    using difference_type = std::ptrdiff_t;
    using pointer = const IdT*;
    using reference = IdT;
    iterator() = default;
    explicit iterator(IdT id) : id_(id) {}
    IdT operator*() const { return id_; }
    iterator& operator++() {
      ++id_;
      return *this;
    }
    iterator operator++(int) { return iterator(id_++); }
    bool operator==(const iterator& o) const { return id_.value() == o.id_.value(); }

   private:
    IdT id_;
  };

  IdRange(IdT begin, IdT end) : begin_(begin), end_(end < begin ? begin : end) {}
  explicit IdRange(typename IdT::rep count) : IdRange(IdT(0), IdT(count)) {}
  iterator begin() const { return iterator(begin_); }
  iterator end() const { return iterator(end_); }
  size_t size() const { return end_.index() - begin_.index(); }

 private:
  IdT begin_, end_;
};

// A std::vector whose elements are indexed by ids of one type.
template <typename IdT, typename T>
class IdVector {
 public:
  using value_type = T;
  using reference = typename std::vector<T>::reference;
  using const_reference = typename std::vector<T>::const_reference;
  using iterator = typename std::vector<T>::iterator;
  using const_iterator = typename std::vector<T>::const_iterator;

  IdVector() = default;
  explicit IdVector(size_t n, const T& value = T()) : data_(n, value) {}
  explicit IdVector(std::vector<T> data) : data_(std::move(data)) {}
  IdVector(std::initializer_list<T> values) : data_(values) {}

  reference operator[](IdT id) { return data_[id.index()]; }
  const_reference operator[](IdT id) const { return data_[id.index()]; }
  reference at(IdT id) { return data_.at(id.index()); }
  const_reference at(IdT id) const { return data_.at(id.index()); }

  size_t size() const { return data_.size(); }
  bool empty() const { return data_.empty(); }
  // The id the next push_back gets, and the ids held.
  IdT next_id() const { return IdT(static_cast<typename IdT::rep>(data_.size())); }
  IdRange<IdT> ids() const { return IdRange<IdT>(IdT(0), next_id()); }

  iterator begin() { return data_.begin(); }
  iterator end() { return data_.end(); }
  const_iterator begin() const { return data_.begin(); }
  const_iterator end() const { return data_.end(); }
  reference back() { return data_.back(); }
  const_reference back() const { return data_.back(); }
  T* data() { return data_.data(); }
  const T* data() const { return data_.data(); }

  void push_back(const T& v) { data_.push_back(v); }
  void push_back(T&& v) { data_.push_back(std::move(v)); }
  template <typename... Args>
  reference emplace_back(Args&&... args) {
    return data_.emplace_back(std::forward<Args>(args)...);
  }
  void resize(size_t n, const T& value = T()) { data_.resize(n, value); }
  void assign(size_t n, const T& value) { data_.assign(n, value); }
  void reserve(size_t n) { data_.reserve(n); }
  void clear() { data_.clear(); }

  // The elements as a plain vector (by position).
  const std::vector<T>& vector() const { return data_; }
  std::vector<T>& vector() { return data_; }

  bool operator==(const IdVector&) const = default;

 private:
  std::vector<T> data_;
};

// An id is written to JSON (nlohmann::json, found by argument-dependent lookup) as its integer.
template <typename BasicJson, typename Tag, typename Rep>
void to_json(BasicJson& j, Id<Tag, Rep> id) {
  j = id.value();
}

}  // namespace dplace

template <typename Tag, typename Rep>
struct std::hash<dplace::Id<Tag, Rep>> {
  size_t operator()(dplace::Id<Tag, Rep> id) const { return std::hash<Rep>()(id.value()); }
};
